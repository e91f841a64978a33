"""A plan's call tried again after a transient failure, each try journaled.

Every failed try that is retried is recorded under the call's key with ``failed_try``
1, 2, … and announced (``on_retry``) before the wait; the outcome of the try that ends
the call is recorded by the caller under the call's own key, as for a call without
retries. A replayed call starts after its
last recorded failed try, so a finished try is never made again. When the retries run
out on a transient error the call fails with
:class:`~dcbrain.exceptions.RetriesExhausted` (itself transient), its cause the last
error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from dcbrain.chain._journaling import PASSTHROUGH, PlanJournal
from dcbrain.exceptions import RetriesExhausted
from dcbrain.journal import JournalKey
from dcbrain.retries import RetryPolicy

T = TypeVar("T")


class RetryListener(Protocol):
    """Hears of a failed try that will be retried: its number (1 for the first), the
    tries allowed, its error and the seconds waited before the next."""

    def __call__(self, attempt: int, attempts: int, error: BaseException,
                 delay_s: float) -> None: ...


class _Tries:
    """What the tries of one call have done and what a failed one leads to."""

    def __init__(self, policy: RetryPolicy, journal: PlanJournal, key: JournalKey | None,
                 on_retry: RetryListener) -> None:
        self.policy = policy
        self.key = key
        self.on_retry = on_retry
        self.first = len(journal.failed_tries(key)) + 1
        # a replay that stopped between two tries waits again before the next
        self.wait = policy.backoff.delay(self.first - 1) if self.first > 1 else 0.0

    def numbers(self) -> range:
        return range(self.first, self.policy.attempts + 1)

    def failed(self, number: int, error: Exception) -> tuple[JournalKey | None, Exception, bool]:
        """The key to record failed try ``number`` under, the error to record, and whether
        another try follows."""
        policy = self.policy
        if isinstance(error, PASSTHROUGH) or not policy.retryable(error):
            return self.key, error, False
        if number >= policy.attempts:
            exhausted = RetriesExhausted(
                f"{type(error).__name__}: {error} (failed {number} tries, each with a "
                "transient error)", attempts=number)
            exhausted.__cause__ = error
            return self.key, exhausted, False
        self.wait = policy.backoff.delay(number)
        return None if self.key is None else self.key.failed(number), error, True

    def retrying(self, number: int, error: Exception) -> None:
        self.on_retry(number, self.policy.attempts, error, self.wait)


def call_with_retries(policy: RetryPolicy, journal: PlanJournal, key: JournalKey | None,
                      kind: str, work: Callable[[], T], on_retry: RetryListener) -> T:
    """Make the tries of ``work`` under ``policy``, recording each failed try that is
    retried; the last try's outcome is the caller's to record (see the module docs)."""
    tries = _Tries(policy, journal, key, on_retry)
    for number in tries.numbers():
        if tries.wait:
            time.sleep(tries.wait)
        started = time.perf_counter()
        try:
            return work()
        except Exception as exc:
            record_key, error, again = tries.failed(number, exc)
            if not again:
                if error is exc:
                    raise
                raise error from exc
            journal.record(record_key, kind, started, error=error)
            tries.retrying(number, exc)
    raise AssertionError("a call ends in its last try")


async def acall_with_retries(policy: RetryPolicy, journal: PlanJournal,
                             key: JournalKey | None, kind: str,
                             work: Callable[[], Awaitable[T]], on_retry: RetryListener) -> T:
    """:func:`call_with_retries` for a call made by awaiting ``work()``."""
    tries = _Tries(policy, journal, key, on_retry)
    for number in tries.numbers():
        if tries.wait:
            await asyncio.sleep(tries.wait)
        started = time.perf_counter()
        try:
            return await work()
        except Exception as exc:
            record_key, error, again = tries.failed(number, exc)
            if not again:
                if error is exc:
                    raise
                raise error from exc
            await journal.arecord(record_key, kind, started, error=error)
            tries.retrying(number, exc)
    raise AssertionError("a call ends in its last try")
