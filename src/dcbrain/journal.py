"""The call journal of a run: every chain, tool and chain-construction call, as it finished.

A call is known by a :class:`JournalKey` that does not depend on thread timing: the plan
attempt, the call's ``parallel`` branch path, the callable's name, the canonical JSON of
its arguments and how many identical calls came before it in the same branch lineage of
that attempt. Within one run:

- a call whose key matches a finished entry of the *same* attempt exactly returns that
  entry (:meth:`CallJournal.lookup`): a run replayed from a persisted journal never runs
  a finished call again;
- a call whose name, arguments and occurrence match a *successful* entry of an *earlier*
  attempt returns the recorded result (:meth:`CallJournal.reusable`), unless the callable
  opted out (``reuse=False``): a replan never repeats finished work.

Failed calls are recorded too (for the trajectory) but never reused. Subclass
:class:`CallJournal` to persist entries: override :meth:`CallJournal.record` and pass the
stored entries to the constructor.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dcbrain._jsonsafe import dumps
from dcbrain.events import to_json_value


def canonical_args(arguments: Any) -> str:
    """The canonical JSON text of a call's arguments: sorted keys, no spaces."""
    return dumps(arguments, sort_keys=True, compact=True)


@dataclass(frozen=True)
class JournalKey:
    """Which call this is, independent of thread timing (see the module docs)."""

    attempt: int
    path: str
    name: str
    args: str
    occurrence: int

    @property
    def text(self) -> str:
        """A stable one-line form, e.g. ``2|1.0|refund|{"order_id":"A1"}|0``."""
        return f"{self.attempt}|{self.path}|{self.name}|{self.args}|{self.occurrence}"

    @property
    def call(self) -> tuple[str, str, int]:
        """What identifies the call across attempts: name, arguments, occurrence."""
        return self.name, self.args, self.occurrence

    def to_dict(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "path": self.path, "name": self.name,
                "args": self.args, "occurrence": self.occurrence}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JournalKey:
        return cls(int(data["attempt"]), str(data["path"]), str(data["name"]),
                   str(data["args"]), int(data["occurrence"]))


@dataclass
class JournalEntry:
    """A finished call: its result (plain data) or its error, duration and tokens.

    ``intermediate`` holds what a chain call added to ``__chains_intermediate_results``,
    so serving the entry again leaves the same intermediate results behind.
    """

    key: JournalKey
    kind: str
    ok: bool
    result: Any = None
    error: str | None = None
    duration_s: float = 0.0
    tokens: int = 0
    intermediate: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON data (results as JSON values: tuples become lists)."""
        return {
            "key": self.key.to_dict(),
            "kind": self.kind,
            "ok": self.ok,
            "result": to_json_value(self.result),
            "error": self.error,
            "duration_s": self.duration_s,
            "tokens": self.tokens,
            "intermediate": to_json_value(self.intermediate),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JournalEntry:
        return cls(
            key=JournalKey.from_dict(data["key"]),
            kind=str(data["kind"]),
            ok=bool(data["ok"]),
            result=data.get("result"),
            error=data.get("error"),
            duration_s=float(data.get("duration_s") or 0.0),
            tokens=int(data.get("tokens") or 0),
            intermediate=data.get("intermediate"),
        )


class CallJournal:
    """The finished calls of one run (thread-safe; plans call from several threads)."""

    def __init__(self, entries: Iterable[JournalEntry] = ()) -> None:
        self._lock = threading.Lock()
        self._entries: list[JournalEntry] = []
        self._exact: dict[JournalKey, JournalEntry] = {}
        self._successes: dict[tuple[str, str, int], list[JournalEntry]] = {}
        for entry in entries:
            self._add(entry)

    def lookup(self, key: JournalKey) -> JournalEntry | None:
        """The entry recorded under exactly ``key`` (a replay of the same attempt)."""
        with self._lock:
            return self._exact.get(key)

    def reusable(self, key: JournalKey) -> JournalEntry | None:
        """A successful entry of an earlier attempt for the same call, if any.

        Among several, the one of the same branch path wins, then the earliest.
        """
        with self._lock:
            candidates = [entry for entry in self._successes.get(key.call, ())
                          if entry.key.attempt < key.attempt]
        if not candidates:
            return None
        same_path = [entry for entry in candidates if entry.key.path == key.path]
        return (same_path or candidates)[0]

    def record(self, entry: JournalEntry) -> None:
        """Add a finished call (the first entry for a key wins)."""
        with self._lock:
            self._add(entry)

    async def arecord(self, entry: JournalEntry) -> None:
        """:meth:`record` from a coroutine.

        A journal that stores its entries (a durable run's) returns once the entry is
        stored, without blocking the loop meanwhile.
        """
        self.record(entry)

    def _add(self, entry: JournalEntry) -> None:
        if entry.key in self._exact:
            return
        self._exact[entry.key] = entry
        self._entries.append(entry)
        if entry.ok:
            self._successes.setdefault(entry.key.call, []).append(entry)

    def entries(self) -> list[JournalEntry]:
        """Every entry, in the order they were recorded."""
        with self._lock:
            return list(self._entries)

    def successful(self) -> list[JournalEntry]:
        """The successful entries, one per distinct call, in the order they were recorded."""
        seen: set[tuple[str, str, int]] = set()
        unique: list[JournalEntry] = []
        for entry in self.entries():
            if entry.ok and entry.key.call not in seen:
                seen.add(entry.key.call)
                unique.append(entry)
        return unique

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass(frozen=True)
class CallContext:
    """What a running call may know about itself: its run and its journal key."""

    run_id: str | None
    key: JournalKey
    reused: bool = False

    @property
    def idempotency_key(self) -> str:
        """A key stable across retries and replays of this call (``run_id:key``)."""
        return f"{self.run_id or ''}:{self.key.text}"


_current_call: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "dcbrain_current_call", default=None
)


def current_call() -> CallContext | None:
    """The journal context of the chain or tool call running now (``None`` outside one).

    A tool with side effects can use ``current_call().idempotency_key`` so that a call
    run again after a crash (at-least-once) does its effect once.
    """
    return _current_call.get()


@contextmanager
def calling(context: CallContext) -> Iterator[None]:
    token = _current_call.set(context)
    try:
        yield
    finally:
        _current_call.reset(token)


@dataclass
class OccurrenceCounter:
    """Counts identical calls in one branch lineage of a plan attempt."""

    path: str = ""
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    forks: int = 0

    def next(self, name: str, args: str) -> int:
        occurrence = self.counts.get((name, args), 0)
        self.counts[(name, args)] = occurrence + 1
        return occurrence

    def fork(self, count: int) -> list[OccurrenceCounter]:
        """Counters for the branches of the next ``parallel(...)`` of this lineage."""
        self.forks += 1
        prefix = f"{self.path}/" if self.path else ""
        return [OccurrenceCounter(f"{prefix}{self.forks}.{index}", dict(self.counts))
                for index in range(count)]


__all__ = [
    "CallContext",
    "CallJournal",
    "JournalEntry",
    "JournalKey",
    "OccurrenceCounter",
    "canonical_args",
    "current_call",
]
