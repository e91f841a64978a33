"""What a durable run records so that a resumed execution replays it deterministically.

Everything goes to the store's journal rows of the run, keyed by text, first write wins:

- ``call|<journal key>``: each finished chain/tool/LLM call (:class:`StoredJournal`); a
  resumed run gets the recorded result and never executes a finished call again;
- ``clock|<n>``: the n-th reading of the run's clock (:class:`RecordedClock`), so the
  wall-time budget is decided on the same times;
- ``commit|<n>`` and ``recall|<n>``: the run's memory writes and reads
  (:class:`RecordedMemory`): a message is committed once, a recall answers the same;
- ``approval|<call_id>``: a person's decision on a call the run waited for
  (:mod:`dcbrain.durable.approvals`): a call is decided once.

A replay that asks, in a branch of a plan attempt, for a call that is not the recorded one
(nor one an earlier attempt answers) while recorded calls of that branch are still unused
has diverged: it raises
:class:`JournalDivergence` rather than run calls live again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections import defaultdict
from typing import Any

from dcbrain.approvals import ApprovalDecision
from dcbrain.durable.store import DurableStore
from dcbrain.durable.writer import StoreWriter
from dcbrain.exceptions import JournalDivergence
from dcbrain.journal import CallJournal, JournalEntry, JournalKey
from dcbrain.memory import MemoryItem, Recall
from dcbrain.messages import TextMessage


class RunJournal:
    """The journal rows of one run, loaded once, and the recorders built on them."""

    def __init__(self, store: DurableStore, run_id: str, *,
                 writer: StoreWriter | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.writer = writer
        rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in store.journal(run_id):
            rows[str(row.get("type"))].append(row)
        self.calls = StoredJournal(self, [JournalEntry.from_dict(r["entry"])
                                          for r in rows["call"]])
        self.clock = RecordedClock(self, [float(r["value"]) for r in rows["clock"]])
        self.commits = {int(r["n"]) for r in rows["commit"]}
        self.recalls = {int(r["n"]): r["recall"] for r in rows["recall"]}
        #: Decisions people took on the run's approval requests (``approval|<call_id>``).
        self.approvals = [ApprovalDecision.from_dict(r["decision"]) for r in rows["approval"]]

    @property
    def replaying(self) -> bool:
        """Whether an earlier execution of this run recorded anything."""
        return bool(len(self.calls) or self.clock.recorded or self.commits or self.recalls)

    def write(self, key: str, row: dict[str, Any], *, wait: bool = True) -> None:
        """Store a row under ``key`` unless one is there.

        With a writer, rows go in the writer's batches, in order; ``wait`` returns only
        once the row is stored. A row not waited for (a clock reading, a recall) may be
        lost in a crash, but only with every row queued after it: a replay then reads
        the clock or recalls again at that point, as the crashed execution would have.
        """
        if self.writer is None:
            self.store.record_journal(self.run_id, key, row)
        else:
            self.writer.add_journal(self.run_id, key, row, wait=wait)

    async def awrite(self, key: str, row: dict[str, Any]) -> None:
        """:meth:`write` from a coroutine: returns once the row is stored, without blocking
        the loop (every run of a worker shares it)."""
        if self.writer is None:
            await asyncio.to_thread(self.store.record_journal, self.run_id, key, row)
        else:
            await self.writer.awrite_journal(self.run_id, key, row)


class StoredJournal(CallJournal):
    """A :class:`~dcbrain.journal.CallJournal` whose entries are rows of the run store."""

    def __init__(self, owner: RunJournal, entries: list[JournalEntry]) -> None:
        super().__init__(entries)
        self._owner = owner
        self._replay_lock = threading.Lock()
        self._expected: dict[tuple[int, str], list[JournalKey]] = defaultdict(list)
        for entry in entries:
            if not entry.key.failed_try:  # read through failed_tries(), never looked up
                self._expected[(entry.key.attempt, entry.key.path)].append(entry.key)
        self._used: set[JournalKey] = set()

    def lookup(self, key: JournalKey) -> JournalEntry | None:
        entry = super().lookup(key)
        lineage = (key.attempt, key.path)
        with self._replay_lock:
            if entry is not None:
                self._used.add(key)
                return entry
            unused = [k for k in self._expected.get(lineage, ()) if k not in self._used]
        # A call a replan served from an earlier attempt has no entry of its own.
        if unused and super().reusable(key) is None:
            raise JournalDivergence(
                f"run {self._owner.run_id}: the replay asked for {key.text!r} in attempt "
                f"{key.attempt} branch {key.path or '(top)'!r} where {unused[0].text!r} "
                f"was recorded")
        return None

    def record(self, entry: JournalEntry) -> None:
        super().record(entry)
        self._owner.write(f"call|{entry.key.text}", {"type": "call", "entry": entry.to_dict()})

    async def arecord(self, entry: JournalEntry) -> None:
        super().record(entry)
        await self._owner.awrite(f"call|{entry.key.text}",
                                 {"type": "call", "entry": entry.to_dict()})


class RecordedClock:
    """A monotonic clock whose readings are recorded in order and replayed in order.

    Past the recorded readings it goes on from the last one, so time never jumps back.
    """

    def __init__(self, owner: RunJournal, readings: list[float]) -> None:
        self._owner = owner
        self._readings = readings
        self.recorded = len(readings)
        self._next = 0
        self._offset: float | None = None
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            index = self._next
            self._next += 1
            if index < len(self._readings):
                return self._readings[index]
            now = time.monotonic()
            if self._offset is None:
                self._offset = (self._readings[-1] - now) if self._readings else 0.0
            value = now + self._offset
            self._readings.append(value)
        self._owner.write(f"clock|{index}", {"type": "clock", "value": value}, wait=False)
        return value


class RecordedMemory:
    """A run's view of a memory: commits happen once, recalls answer as recorded.

    Every other attribute is the wrapped memory's.
    """

    def __init__(self, memory: Any, journal: RunJournal) -> None:
        self._memory = memory
        self._journal = journal
        self._lock = threading.Lock()
        self._commits = 0
        self._recalls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def _next(self, counter: str) -> int:
        with self._lock:
            value: int = getattr(self, counter)
            setattr(self, counter, value + 1)
            return value

    def commit_message(self, conversation_id: str, message: Any, *args: Any,
                       **kwargs: Any) -> Any:
        number = self._next("_commits")
        if number in self._journal.commits:
            return None  # committed by an earlier execution of this run
        result = self._memory.commit_message(conversation_id, message, *args, **kwargs)
        self._journal.write(f"commit|{number}", {"type": "commit", "n": number})
        return result

    async def acommit_message(self, conversation_id: str, message: Any, *args: Any,
                              **kwargs: Any) -> Any:
        number = self._next("_commits")
        if number in self._journal.commits:
            return None
        result = await self._memory.acommit_message(conversation_id, message, *args, **kwargs)
        await self._journal.awrite(f"commit|{number}", {"type": "commit", "n": number})
        return result

    async def arecall(self, *args: Any, **kwargs: Any) -> Recall:
        number = self._next("_recalls")
        recorded = self._journal.recalls.get(number)
        if recorded is not None:
            return _recall_from(recorded)
        recall: Recall = await self._memory.arecall(*args, **kwargs)
        self._journal.write(f"recall|{number}", {"type": "recall", "n": number,
                                                 "recall": dataclasses.asdict(recall)},
                            wait=False)
        return recall


def record_question_kept(store: DurableStore, run_id: str) -> None:
    """Record that the run's question is in its conversation already (the server added it
    when it took the message), so the run's first commit, the question's, is skipped."""
    store.record_journal(run_id, "commit|0", {"type": "commit", "n": 0})


def _recall_from(data: dict[str, Any]) -> Recall:
    return Recall(
        conversation=[TextMessage(**m) for m in data.get("conversation", [])],
        documents=[MemoryItem(**i) for i in data.get("documents", [])],
        knowledge=[MemoryItem(**i) for i in data.get("knowledge", [])],
        keyword_hits=[MemoryItem(**i) for i in data.get("keyword_hits", [])],
    )
