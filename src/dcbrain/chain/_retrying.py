"""The tries of a plan's call, journaled: the :class:`~dcbrain.retries.RetryHooks` of the
chain layer.

Every failed try that is retried is recorded under the call's key with ``failed_try``
1, 2, … and announced (a ``call_retry`` event) before the wait; the outcome of the try
that ends the call is recorded by the caller under the call's own key, as for a call
without retries. A replayed call starts after its last recorded failed try, so a finished
try is never made again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from dcbrain.chain._announce import CallAnnouncer
from dcbrain.chain._journaling import PASSTHROUGH, PlanJournal
from dcbrain.journal import JournalKey
from dcbrain.retries import RetryPolicy, acall_with_retries, call_with_retries
from dcbrain.tfplan import CallRecord

T = TypeVar("T")


class JournaledTries:
    """Journals and announces the retried tries of the call ``key`` (``record`` its trace
    record, when an observer hears of it)."""

    def __init__(self, journal: PlanJournal, key: JournalKey | None, kind: str,
                 announcer: CallAnnouncer | None, record: CallRecord | None) -> None:
        self.journal = journal
        self.key = key
        self.kind = kind
        self.announcer = announcer
        self.record = record

    def first(self) -> int:
        """The number of the next try: after those a replayed call recorded."""
        return len(self.journal.failed_tries(self.key)) + 1

    def retrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                 started: float) -> None:
        self.journal.record(self._key(attempt), self.kind, started, error=error)
        self._announce(attempt, attempts, error, delay_s)

    async def aretrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                        started: float) -> None:
        await self.journal.arecord(self._key(attempt), self.kind, started, error=error)
        self._announce(attempt, attempts, error, delay_s)

    def _key(self, attempt: int) -> JournalKey | None:
        return None if self.key is None else self.key.failed(attempt)

    def _announce(self, attempt: int, attempts: int, error: Exception, delay_s: float) -> None:
        if self.announcer is not None and self.record is not None:
            self.announcer.retried(self.record, attempt, attempts, error, delay_s)

    def call(self, policy: RetryPolicy, work: Callable[[], T]) -> T:
        return call_with_retries(policy, work, self, first=self.first(), never=PASSTHROUGH)

    async def acall(self, policy: RetryPolicy, work: Callable[[], Awaitable[T]]) -> T:
        return await acall_with_retries(policy, work, self, first=self.first(),
                                        never=PASSTHROUGH)
