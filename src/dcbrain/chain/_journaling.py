"""The run journal as a plan's calls see it: their keys, the entries that answer them,
what is recorded when a call finishes, and the call context tools read."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypedDict, TypeVar, Unpack

from dcbrain.chain._plan_scope import current_scope
from dcbrain.exceptions import (
    ApprovalRequired,
    TFRecordedCallError,
    TFTokenBudgetExceeded,
    TFUserNewInputError,
)
from dcbrain.journal import (
    CallContext,
    CallJournal,
    JournalEntry,
    JournalKey,
    OccurrenceCounter,
    calling,
    canonical_args,
)
from dcbrain.retries import is_transient
from dcbrain.tfplan import call_may_finish
from dcbrain.tfplan.values import CONTAINER_BYTES, PART_BYTES

#: Errors that end a plan as they are instead of becoming a plan error (no replan helps,
#: or none is needed: a call waiting for approval); they are not recorded either: the call
#: did not finish.
PASSTHROUGH: tuple[type[BaseException], ...] = (TFUserNewInputError, TFTokenBudgetExceeded,
                                                ApprovalRequired)

T = TypeVar("T")


class Outcome(TypedDict, total=False):
    """How a call ended: its ``result`` or its ``error``; its ``tokens`` and the
    ``intermediate`` results it added (chains)."""

    result: Any
    error: BaseException | None
    tokens: int
    intermediate: dict[str, Any] | None


class PlanJournal:
    """Journals the calls of plan attempt ``attempt`` of run ``run_id`` (none without
    ``journal``: every method then does nothing but the call)."""

    def __init__(self, journal: CallJournal | None, attempt: int, run_id: str | None) -> None:
        self.journal = journal
        self.attempt = attempt
        self.run_id = run_id

    def find(
        self, counter: OccurrenceCounter, name: str, arguments: Mapping[str, Any], *,
        reuse: bool,
    ) -> tuple[JournalKey | None, JournalEntry | None]:
        """This call's key and the entry that answers it: exactly this call of a replayed
        attempt, else (with ``reuse``) the same call finished by an earlier attempt."""
        if self.journal is None:
            return None, None
        args = canonical_args(dict(arguments))
        key = JournalKey(self.attempt, counter.path, name, args, counter.next(name, args))
        entry = self.journal.lookup(key)
        if entry is None and reuse:
            entry = self.journal.reusable(key)
        return key, entry

    def failed_tries(self, key: JournalKey | None) -> list[JournalEntry]:
        """The recorded failed tries of the call ``key`` (a replayed call with retries)."""
        if key is None or self.journal is None:
            return []
        return self.journal.failed_tries(key)

    def record(self, key: JournalKey | None, kind: str, started: float,
               **outcome: Unpack[Outcome]) -> None:
        """Record a finished call (``started`` from ``time.perf_counter()``)."""
        entry = self._entry(key, kind, started, outcome)
        if entry is not None and self.journal is not None:
            self.journal.record(entry)

    async def arecord(self, key: JournalKey | None, kind: str, started: float,
                      **outcome: Unpack[Outcome]) -> None:
        """:meth:`record` from a coroutine (a stored journal's write does not block)."""
        entry = self._entry(key, kind, started, outcome)
        if entry is not None and self.journal is not None:
            await self.journal.arecord(entry)

    def _entry(self, key: JournalKey | None, kind: str, started: float,
               outcome: Outcome) -> JournalEntry | None:
        error = outcome.get("error")
        if key is None or self.journal is None or isinstance(error, PASSTHROUGH):
            return None
        return JournalEntry(
            key=key,
            kind=kind,
            ok=error is None,
            result=journal_copy(outcome.get("result")) if error is None else None,
            error=None if error is None else _error_text(error),
            duration_s=time.perf_counter() - started,
            tokens=outcome.get("tokens", 0),
            intermediate=outcome.get("intermediate") or None,
            transient=is_transient(error),
        )

    def call(self, key: JournalKey | None, kind: str, work: Callable[[], T]) -> T:
        """Run ``work`` as the call ``key`` and record how it ended, unless its plan
        abandoned it meanwhile (its return is ignored: the call did not finish for the run)."""
        started = time.perf_counter()
        try:
            with self.context(key):
                result = work()
        except Exception as exc:
            if key is not None and call_may_finish():
                self.record(key, kind, started, error=exc)
            raise
        if key is not None and call_may_finish():
            self.record(key, kind, started, result=result)
        return result

    async def acall(self, key: JournalKey | None, kind: str, work: Awaitable[T]) -> T:
        """:meth:`call` for an awaitable."""
        started = time.perf_counter()
        try:
            with self.context(key):
                result = await work
        except Exception as exc:
            await self.arecord(key, kind, started, error=exc)
            raise
        await self.arecord(key, kind, started, result=result)
        return result

    def context(self, key: JournalKey | None) -> AbstractContextManager[None]:
        """The call context (:func:`~dcbrain.journal.current_call`) of the call ``key``."""
        if key is None:
            return nullcontext()
        return calling(CallContext(self.run_id, key))


def replayed(entry: JournalEntry) -> Any:
    """The recorded outcome of a journaled call: its result, or its error raised again."""
    if not entry.ok:
        raise _recorded_error(entry)
    return plain_copy(entry.result)


def _recorded_error(entry: JournalEntry) -> TFRecordedCallError:
    error = TFRecordedCallError(entry.error or "the call failed")
    error.transient = entry.transient  # a replayed run decides on it as the first did
    return error


def journal_copy(value: Any) -> Any:
    """:func:`plain_copy` of a result for the journal, paid for from the host budget of
    the plan run making the call: the copy stops where that budget ends."""
    scope = current_scope.get()
    if scope is None:
        return plain_copy(value)
    budget = scope.budget
    cap = budget.available()
    used = 0

    def copy(item: Any) -> Any:
        nonlocal used
        used += sys.getsizeof(item) if type(item) is str else PART_BYTES
        if used > cap:
            raise budget.refusal("journal entry")
        if isinstance(item, dict):
            used += CONTAINER_BYTES
            return {key: copy(child) for key, child in item.items()}
        if isinstance(item, list | tuple | set):
            used += CONTAINER_BYTES
            copied = [copy(child) for child in item]
            return copied if isinstance(item, list) else type(item)(copied)
        return item

    try:
        copied = copy(value)
    finally:
        # it calls itself through its closure: a cycle, broken here at once
        copy = None  # type: ignore[assignment]
    budget.charge(used, "journal entry")
    return copied


def plain_copy(value: Any) -> Any:
    """A deep copy of plain data, so neither the journal nor a plan sees the other's edits."""
    if isinstance(value, dict):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_copy(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain_copy(item) for item in value)
    if isinstance(value, set):
        return {plain_copy(item) for item in value}
    return value


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
