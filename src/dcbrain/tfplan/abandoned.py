"""Threads still running calls the host stopped waiting for, capped per process.

A sync chain or tool cannot be interrupted: one that outlives its deadline (its own
``timeout_s``, or its plan's time limit) is abandoned, and its thread runs on until the
callable returns. Each such thread is counted here until it does. Once the process holds
:data:`MAX_ABANDONED_THREADS` of them, a callable that has an abandoned call of its own
still running is refused at its next call (:class:`~dcbrain.tfplan.errors.TFToolUnavailable`)
instead of taking one more thread; a callable that has none is still called.
"""

from __future__ import annotations

import threading
from collections import Counter

from dcbrain.tfplan.errors import TFToolUnavailable

#: Abandoned threads a process holds before callables with one of them are refused.
MAX_ABANDONED_THREADS = 32


class AbandonedCall:
    """One call that may be abandoned: its thread is counted from :meth:`AbandonedThreads.
    abandon` until :meth:`AbandonedThreads.end`."""

    __slots__ = ("abandoned", "ended", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.abandoned = False
        self.ended = False


class AbandonedThreads:
    """The abandoned threads of this process, by the name of the callable they run."""

    def __init__(self, limit: int = MAX_ABANDONED_THREADS) -> None:
        self.limit = limit
        self.total = 0
        self.running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def check(self, name: str, what: str) -> None:
        """Refuse a call of ``name`` (``what``: how to name it) when the process holds its
        limit of abandoned threads and ``name`` has one of them."""
        with self._lock:
            refused = self.total >= self.limit and self.running[name] > 0
            held, own = self.total, self.running[name]
        if refused:
            raise TFToolUnavailable(
                f"{what} was not called: this process holds {held} threads of calls that "
                f"outlived their deadline (at most {self.limit}), {own} of them of {what}, "
                "still running; it is called again once they return")

    def start(self, name: str) -> AbandonedCall:
        return AbandonedCall(name)

    def abandon(self, call: AbandonedCall) -> None:
        """Its caller stopped waiting for ``call``: count its thread until it ends."""
        with self._lock:
            if call.ended or call.abandoned:
                return
            call.abandoned = True
            self.total += 1
            self.running[call.name] += 1

    def end(self, call: AbandonedCall) -> None:
        """``call`` returned (or raised): its thread is free."""
        with self._lock:
            if call.ended:
                return
            call.ended = True
            if call.abandoned:
                self.total -= 1
                self.running[call.name] -= 1
                if self.running[call.name] <= 0:
                    del self.running[call.name]


#: The abandoned threads of this process.
abandoned_threads = AbandonedThreads()


def set_max_abandoned_threads(limit: int) -> None:
    """Set :data:`MAX_ABANDONED_THREADS` for this process."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"the limit of abandoned threads must be a positive int, got {limit!r}")
    abandoned_threads.limit = limit
