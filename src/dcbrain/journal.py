"""The call journal of a run: every chain, tool and chain-construction call, as it finished.

A call is known by a :class:`JournalKey` that does not depend on thread timing: the plan
attempt, the call's ``parallel`` branch path, the callable's name, the canonical text of
its arguments (:func:`canonical_args`: one text per value, told apart by type) and how
many identical calls came before it in the same branch lineage of that attempt.
Within one run:

- a call whose key matches a finished entry of the *same* attempt exactly returns that
  entry (:meth:`CallJournal.lookup`): a run replayed from a persisted journal never runs
  a finished call again;
- a call whose name, arguments and occurrence match a *successful* entry of an *earlier*
  attempt returns the recorded result (:meth:`CallJournal.reusable`), unless the callable
  opted out (``reuse=False``): a replan never repeats finished work.

Failed calls are recorded too (for the trajectory) but never reused. A call with retries
records each failed try it retried under its key with ``failed_try`` 1, 2, …
(:meth:`CallJournal.failed_tries`), so a replayed call goes on with the try after the
last recorded one instead of repeating finished tries. Subclass
:class:`CallJournal` to persist entries: override :meth:`CallJournal.record` and pass the
stored entries to the constructor.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import json
import math
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dcbrain.events import to_json_value
from dcbrain.values.scalars import JOURNAL_TAGS, from_journal_text, journal_text

#: Canonical texts longer than this are replaced by their SHA-256 digest, so a key (a
#: primary key in durable stores) stays short whatever the arguments.
MAX_ARGS_CHARS = 1024
#: Containers nested deeper than this are refused rather than encoded.
MAX_ARGS_DEPTH = 10_000
#: Integers of more bits are written in hexadecimal: decimal conversion of very large
#: integers is capped by the interpreter (``sys.set_int_max_str_digits``).
_DECIMAL_INT_BITS = 3000


def canonical_args(arguments: Any) -> str:
    """The canonical text of a call's arguments: equal values, equal texts, and only them.

    Invariant: ``canonical_args(a) == canonical_args(b)`` exactly when ``a`` and ``b`` are
    the same plan value — of the same types all the way down (``1``, ``1.0``, ``True``
    and ``"1"`` differ; so do a tuple and a list, ``{1: x}`` and ``{"1": x}``, ``nan``
    and ``"nan"``, ``0.0`` and ``-0.0``) and equal in value (dict order does not matter;
    ``nan`` equals ``nan``). Nothing is truncated: a text over :data:`MAX_ARGS_CHARS`
    characters becomes ``sha256:<hex digest of the text>`` (distinct as long as SHA-256
    has no collision; no text of another form starts with ``s``). Plan values are ``None``,
    bool, int, float, str, bytes, list, tuple, dict, set, frozenset, Decimal, date,
    datetime, time and timedelta (a Decimal by its digits: ``1.0`` and ``1.00`` differ;
    a datetime by its ISO text, offset included); any other object is known by its type
    and ``repr``.

    The text is JSON and, for the common case, plain JSON: a dict of string keys is an
    object with sorted keys, a list an array, a finite float its ``repr``. Everything
    else is an object of one ``$``-tag (``{"$tuple": [...]}``, ``{"$float": "nan"}``,
    ``{"$dict": [[key, value], ...]}``, …), and a dict with a key starting with ``$`` is
    written as ``$dict``, so no value reads as another.
    """
    text = _flat(arguments) if type(arguments) is dict else None
    if text is None:
        text = _canonical(arguments)
    if len(text) > MAX_ARGS_CHARS:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return text


def _tagged(tag: str, body: str) -> str:
    return f'{{"${tag}":{body}}}'


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _canonical(value: Any) -> str:
    """``value``'s canonical JSON text (see :func:`canonical_args`), without recursion."""
    done: list[str] = []  # texts of finished values, in order
    # ("value", item, depth): encode item; ("close", container, child_count): combine
    work: list[tuple[str, Any, int]] = [("value", value, 0)]
    active: set[int] = set()  # the containers being encoded, to refuse cycles
    while work:
        step, item, number = work.pop()
        if step == "close":
            children = done[len(done) - number:]
            del done[len(done) - number:]
            done.append(_close(item, children))
            active.discard(id(item))
            continue
        kind = type(item)
        if kind not in _CONTAINERS:
            done.append(_scalar(item))
            continue
        if number >= MAX_ARGS_DEPTH:
            raise ValueError(f"call arguments nested deeper than {MAX_ARGS_DEPTH} levels")
        if id(item) in active:
            raise ValueError("call arguments contain themselves")
        active.add(id(item))
        if kind is dict:
            children = ([child for _, child in sorted(item.items())] if _plain_keys(item)
                        else [child for pair in item.items() for child in pair])
        else:
            children = list(item)
        work.append(("close", item, len(children)))
        work.extend(("value", child, number + 1) for child in reversed(children))
    return done[0]


def _flat(arguments: dict[Any, Any]) -> str | None:
    """:func:`_canonical` of a dict written as a JSON object whose values are no
    containers (the usual call's arguments), in one pass; ``None`` for any other dict."""
    for value in arguments.values():
        if type(value) in _CONTAINERS:
            return None
    if not _plain_keys(arguments):
        return None
    return "{" + ",".join(f"{_string(key)}:{_scalar(arguments[key])}"
                          for key in sorted(arguments)) + "}"


def _plain_keys(mapping: dict[Any, Any]) -> bool:
    """Whether a dict is written as a JSON object: UTF-8 string keys, none starting with
    ``$``."""
    return all(type(key) is str and not key.startswith("$") and _encodable(key)
               for key in mapping)


def _close(container: Any, children: list[str]) -> str:
    """The text of ``container`` from the texts of its children (as :func:`_canonical`
    listed them)."""
    kind = type(container)
    if kind is list:
        return f"[{','.join(children)}]"
    if kind is tuple:
        return _tagged("tuple", f"[{','.join(children)}]")
    if kind is dict:
        if _plain_keys(container):
            return "{" + ",".join(f"{_string(key)}:{child}" for key, child in
                                  zip(sorted(container), children, strict=True)) + "}"
        pairs = sorted(f"[{children[i]},{children[i + 1]}]" for i in range(0, len(children), 2))
        return _tagged("dict", f"[{','.join(pairs)}]")
    return _tagged(kind.__name__, f"[{','.join(sorted(children))}]")


def _scalar(value: Any) -> str:
    kind = type(value)
    if value is None or kind is bool:
        return json.dumps(value)
    if kind is int:
        if value.bit_length() > _DECIMAL_INT_BITS:
            return _tagged("int", json.dumps(format(value, "x")))
        return str(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else _tagged("float", json.dumps(repr(value)))
    if kind is str:
        return _string(value)
    if kind is bytes:
        return _tagged("bytes", json.dumps(value.hex()))
    tag = JOURNAL_TAGS.get(kind)
    if tag is not None:
        return f'{{"{tag}":{json.dumps(journal_text(value))}}}'
    return _tagged("object", f"[{_string(f'{kind.__module__}.{kind.__qualname__}')},"
                             f"{_string(repr(value))}]")


def _string(text: str) -> str:
    """A JSON string; one holding a lone surrogate (not UTF-8) is tagged and escaped."""
    if _encodable(text):
        return json.dumps(text, ensure_ascii=False)
    return _tagged("str", json.dumps(json.dumps(text)))


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class JournalKey:
    """Which call this is, independent of thread timing (see the module docs)."""

    attempt: int
    path: str
    name: str
    args: str
    occurrence: int
    #: 0 for the call itself; n for the n-th try of the call that failed and was retried.
    failed_try: int = 0

    @property
    def text(self) -> str:
        """A stable one-line form, e.g. ``2|1.0|refund|{"order_id":"A1"}|0`` (a failed try
        adds ``|try=<n>``)."""
        text = f"{self.attempt}|{self.path}|{self.name}|{self.args}|{self.occurrence}"
        return f"{text}|try={self.failed_try}" if self.failed_try else text

    def failed(self, number: int) -> JournalKey:
        """The key of this call's ``number``-th failed try."""
        return dataclasses.replace(self, failed_try=number)

    @property
    def call(self) -> tuple[str, str, int]:
        """What identifies the call across attempts: name, arguments, occurrence."""
        return self.name, self.args, self.occurrence

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"attempt": self.attempt, "path": self.path,
                                "name": self.name, "args": self.args,
                                "occurrence": self.occurrence}
        if self.failed_try:
            data["failed_try"] = self.failed_try
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JournalKey:
        return cls(int(data["attempt"]), str(data["path"]), str(data["name"]),
                   str(data["args"]), int(data["occurrence"]), int(data.get("failed_try", 0)))


@dataclass
class JournalEntry:
    """A finished call: its result (plain data) or its error, duration and tokens.

    ``intermediate`` holds what a chain call added to ``__chains_intermediate_results``,
    so serving the entry again leaves the same intermediate results behind; ``transient``
    whether the error said a new try may pass.
    """

    key: JournalKey
    kind: str
    ok: bool
    result: Any = None
    error: str | None = None
    duration_s: float = 0.0
    tokens: int = 0
    intermediate: dict[str, Any] | None = None
    transient: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON data (results as JSON values: tuples become lists)."""
        data = {
            "key": self.key.to_dict(),
            "kind": self.kind,
            "ok": self.ok,
            "result": to_json_value(journal_value(self.result)),
            "error": self.error,
            "duration_s": self.duration_s,
            "tokens": self.tokens,
            "intermediate": to_json_value(journal_value(self.intermediate)),
        }
        if self.transient:
            data["transient"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JournalEntry:
        return cls(
            key=JournalKey.from_dict(data["key"]),
            kind=str(data["kind"]),
            ok=bool(data["ok"]),
            result=from_journal_value(data.get("result")),
            error=data.get("error"),
            duration_s=float(data.get("duration_s") or 0.0),
            tokens=int(data.get("tokens") or 0),
            intermediate=from_journal_value(data.get("intermediate")),
            transient=data.get("transient") is True,
        )


_TAG_TYPES = {tag: kind for kind, tag in JOURNAL_TAGS.items()}
#: The tag of a dict written as it is: one whose only key is a tag of :data:`JOURNAL_TAGS`
#: (or this one) would otherwise read back as a value.
_PLAIN_DICT_TAG = "$plain"


def journal_value(value: Any, _depth: int = 0) -> Any:
    """``value`` with every Decimal, date, datetime, time and timedelta written as a
    one-key tagged dict (``{"$decimal": "129.99"}``), so that JSON holds it and
    :func:`from_journal_value` reads back the same types (a resumed run sees what the
    first one saw)."""
    kind = type(value)
    tag = JOURNAL_TAGS.get(kind)
    if tag is not None:
        return {tag: journal_text(value)}
    if _depth > _MAX_VALUE_DEPTH:
        return value
    if kind is dict:
        encoded = {key: journal_value(item, _depth + 1) for key, item in value.items()}
        if len(value) == 1 and next(iter(value)) in _TAGS_READ:
            return {_PLAIN_DICT_TAG: encoded}
        return encoded
    if kind is list or kind is tuple:
        return [journal_value(item, _depth + 1) for item in value]
    return value


def from_journal_value(data: Any, _depth: int = 0) -> Any:
    """The value :func:`journal_value` wrote (after a JSON round trip)."""
    kind = type(data)
    if kind is list and _depth <= _MAX_VALUE_DEPTH:
        return [from_journal_value(item, _depth + 1) for item in data]
    if kind is not dict or _depth > _MAX_VALUE_DEPTH:
        return data
    if len(data) == 1:
        key, item = next(iter(data.items()))
        if key in _TAG_TYPES and type(item) is str:
            try:
                return from_journal_text(key, item)
            except ValueError:
                return data
        if key == _PLAIN_DICT_TAG and type(item) is dict:
            return {name: from_journal_value(child, _depth + 1) for name, child in item.items()}
    return {key: from_journal_value(item, _depth + 1) for key, item in data.items()}


_TAGS_READ = frozenset({*_TAG_TYPES, _PLAIN_DICT_TAG})
#: Deeper than this the JSON of an entry is cut anyway (``_jsonsafe.MAX_DEPTH``).
_MAX_VALUE_DEPTH = 100


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

    def failed_tries(self, key: JournalKey) -> list[JournalEntry]:
        """The recorded failed tries of the call ``key``, in order (see the module docs)."""
        tries: list[JournalEntry] = []
        with self._lock:
            while (entry := self._exact.get(key.failed(len(tries) + 1))) is not None:
                tries.append(entry)
        return tries

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
