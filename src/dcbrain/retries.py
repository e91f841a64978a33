"""How a call is tried again after a transient failure: which errors, how often, how long
to wait in between.

A :class:`RetryPolicy` is data: ``retries`` further tries after the first, the error
classes ``retry_on`` that are worth one, and the :class:`Backoff` between tries
(exponential, capped, with jitter). Tools, chains and MCP servers take one each
(``Tool(func, retries=3)``). :func:`call_with_retries`/:func:`acall_with_retries` make
the tries; the caller's :class:`RetryHooks` journal each failed try that is retried and
announce it (a ``call_retry`` event). Tries are made only for errors of ``retry_on``;
passing errors of the run itself (a new user message, a spent budget) must not be.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

from dcbrain.exceptions import RetriesExhausted, TransientError

T = TypeVar("T")

#: When the caller stops waiting for the call being made in this context
#: (``time.monotonic()``; a plan sets its own time limit for each chain and tool call):
#: no try starts, and no backoff sleeps, past it.
call_deadline: ContextVar[float | None] = ContextVar("dcbrain_call_deadline", default=None)

#: What is retried when nothing else is said: connections that failed or were lost, calls
#: that timed out, and failures a tool declared transient.
DEFAULT_RETRY_ON: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError,
                                                     TransientError)


@dataclass(frozen=True)
class Backoff:
    """The wait before retry ``n``: ``initial_s * multiplier ** (n - 1)``, at most
    ``max_s``; with ``jitter`` a random part of it, between half and all of it, so calls
    that failed together do not all come back at once."""

    initial_s: float = 0.5
    max_s: float = 10.0
    multiplier: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        for name in ("initial_s", "max_s", "multiplier"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"Backoff: {name} must be a finite number >= 0, got {value!r}")
        if self.multiplier < 1:
            raise ValueError(f"Backoff: multiplier must be >= 1, got {self.multiplier!r}")

    @classmethod
    def fixed(cls, delay_s: float) -> Backoff:
        """The same wait before every retry, no jitter."""
        return cls(initial_s=delay_s, max_s=delay_s, multiplier=1.0, jitter=False)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        exponent = max(retry - 1, 0)
        base = self.initial_s * self.multiplier ** min(exponent, 64)
        capped = min(base, self.max_s)
        return capped * random.uniform(0.5, 1.0) if self.jitter else capped


@dataclass(frozen=True)
class RetryPolicy:
    """Up to ``retries`` more tries of a call that failed with one of ``retry_on``."""

    retries: int = 0
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON
    backoff: Backoff = Backoff()

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) \
                or self.retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {self.retries!r}")
        for kind in self.retry_on:
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"retry_on must hold exception classes, got {kind!r}")

    @classmethod
    def of(
        cls,
        retries: int = 0,
        retry_on: Iterable[type[BaseException]] | None = None,
        backoff: Backoff | float | None = None,
    ) -> RetryPolicy | None:
        """The policy for a callable's ``retries``/``retry_on``/``backoff`` settings;
        ``None`` when it has no retries (nothing to do on a call's path). A number as
        ``backoff`` is a fixed wait in seconds."""
        if retries == 0:
            cls(retries)  # the same validation as a policy with retries
            return None
        if isinstance(backoff, int | float) and not isinstance(backoff, bool):
            backoff = Backoff.fixed(float(backoff))
        elif backoff is not None and not isinstance(backoff, Backoff):
            raise TypeError(f"backoff must be a Backoff or a number of seconds, got {backoff!r}")
        return cls(retries=retries,
                   retry_on=DEFAULT_RETRY_ON if retry_on is None else tuple(retry_on),
                   backoff=backoff or Backoff())

    @property
    def attempts(self) -> int:
        """Tries in all: the first and the retries."""
        return self.retries + 1

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` is worth another try."""
        return isinstance(error, self.retry_on)


class RetryHooks(Protocol):
    """What a caller does when try ``attempt`` of ``attempts`` failed with ``error`` and
    is retried after ``delay_s`` seconds (``started``: when the try began, from
    ``time.perf_counter()``): journal it, announce it. One method per kind of caller."""

    def retrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                 started: float) -> None: ...

    async def aretrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                        started: float) -> None: ...


def call_with_retries(policy: RetryPolicy, work: Callable[[], T], hooks: RetryHooks, *,
                      first: int = 1, never: tuple[type[BaseException], ...] = ()) -> T:
    """``work()`` tried under ``policy``, from try ``first`` on (a replayed call goes on
    after the tries it recorded); errors of ``never`` are never retried.
    :class:`~dcbrain.exceptions.RetriesExhausted`, caused by the last error, when every
    try failed with a retryable one."""
    wait = policy.backoff.delay(first - 1) if first > 1 else 0.0
    for number in range(first, policy.attempts + 1):
        if wait:
            time.sleep(wait)
        started = time.perf_counter()
        try:
            return work()
        except Exception as exc:
            next_wait = _next_wait(policy, number, exc, never)
            if next_wait is None:
                raise
            wait = next_wait
            hooks.retrying(number, policy.attempts, exc, wait, started)
    raise AssertionError("the last try returns or raises")


async def acall_with_retries(policy: RetryPolicy, work: Callable[[], Awaitable[T]],
                             hooks: RetryHooks, *, first: int = 1,
                             never: tuple[type[BaseException], ...] = ()) -> T:
    """:func:`call_with_retries` for a call made by awaiting ``work()``."""
    import asyncio  # here, not at the top: sandbox processes never load asyncio

    wait = policy.backoff.delay(first - 1) if first > 1 else 0.0
    for number in range(first, policy.attempts + 1):
        if wait:
            await asyncio.sleep(wait)
        started = time.perf_counter()
        try:
            return await work()
        except Exception as exc:
            next_wait = _next_wait(policy, number, exc, never)
            if next_wait is None:
                raise
            wait = next_wait
            await hooks.aretrying(number, policy.attempts, exc, wait, started)
    raise AssertionError("the last try returns or raises")


def _next_wait(policy: RetryPolicy, number: int, error: Exception,
               never: tuple[type[BaseException], ...]) -> float | None:
    """The wait before the try after failed try ``number``; ``None`` when ``error`` is
    not retried, :class:`~dcbrain.exceptions.RetriesExhausted` when no try is left."""
    if isinstance(error, never) or not policy.retryable(error):
        return None
    if number >= policy.attempts:
        raise RetriesExhausted(
            f"{type(error).__name__}: {error} (failed {number} tries, each with a "
            "transient error)", attempts=number) from error
    wait = policy.backoff.delay(number)
    deadline = call_deadline.get()
    if deadline is not None and time.monotonic() + wait >= deadline:
        raise RetriesExhausted(
            f"{type(error).__name__}: {error} (failed {number} of {policy.attempts} tries, "
            "each with a transient error; no time is left for another before the caller's "
            "deadline)", attempts=number) from error
    return wait


def is_transient(error: BaseException | None) -> bool:
    """Whether ``error`` says it may pass on a new try (``transient``: a
    :class:`~dcbrain.exceptions.TransientError`, or a plan error that ended in one)."""
    return bool(getattr(error, "transient", False))


__all__ = [
    "DEFAULT_RETRY_ON",
    "Backoff",
    "RetryHooks",
    "RetryPolicy",
    "acall_with_retries",
    "call_with_retries",
    "is_transient",
]
