"""Streamed LLM text as events: the plan as the planner writes it (``plan_delta``), a chain
call's output as its LLM writes it (``chain_delta``).

:class:`TextDeltas` listens for LLM calls (``stream_llm_replies``) and coalesces their
chunks, so a fast model sends at most :data:`MAX_DELTAS_PER_SECOND` events however many
tokens it writes: the first chunk goes out at once, later ones wait
for the rest of the interval (a timer on the event loop sends what is pending, so a model
that pauses is still shown), and what is left goes out when the reply ends — before the
whole plan is announced.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from dcbrain.events import EventData, PlanDelta

#: At most this many ``plan_delta`` events a second.
MAX_DELTAS_PER_SECOND = 20


class TextDeltas:
    """Turns streamed text into events ``event(offset, text)``, given to ``emit``."""

    def __init__(
        self,
        emit: Callable[[EventData], Any],
        event: Callable[[int, str], EventData],
        *,
        interval_s: float = 1.0 / MAX_DELTAS_PER_SECOND,
    ) -> None:
        self._emit = emit
        self._event = event
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._start = 0  # offset of the pending text in its reply
        self._offset = 0  # characters of the current reply received
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def open_reply(self) -> Callable[[str], None]:
        """An LLM call begins a reply: what is pending of the previous one goes
        out first, and offsets start again at 0."""
        self.flush()
        with self._lock:
            self._offset = self._start = 0
        return self._take

    def also(self, open_reply: Callable[[], Callable[[str], None]]
             ) -> Callable[[], Callable[[str], None]]:
        """:meth:`open_reply`, with each reply's text given to ``open_reply``'s callback
        too (after this one took it)."""
        def opened() -> Callable[[str], None]:
            ours, theirs = self.open_reply(), open_reply()

            def take(text: str) -> None:
                ours(text)
                theirs(text)
            return take
        return opened

    def _take(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self._closed:
                return
            if not self._pending:
                self._start = self._offset
            self._pending.append(text)
            self._offset += len(text)
            wait = self._last + self.interval_s - time.monotonic()
            if wait > 0:
                self._schedule(wait)
                return
        self.flush()

    def _schedule(self, wait: float) -> None:
        """Send the pending text in ``wait`` seconds (called with the lock held)."""
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a chunk from outside a loop: it goes with the next one
            return
        self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Send what is pending as one event."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._pending:
                return
            text, start = "".join(self._pending), self._start
            self._pending.clear()
            self._last = time.monotonic()
        self._emit(self._event(start, text))

    def close(self) -> None:
        """The planning ended: the rest goes out now, later chunks are dropped."""
        self.flush()
        with self._lock:
            self._closed = True


class PlanDeltas(TextDeltas):
    """The planner's streamed text of one planning as ``plan_delta`` events."""

    def __init__(
        self,
        emit: Callable[[EventData], Any],
        iteration: int,
        *,
        interval_s: float = 1.0 / MAX_DELTAS_PER_SECOND,
    ) -> None:
        # not a method of its own: the event maker is kept on it (no cycle to collect)
        super().__init__(emit, partial(_plan_delta, iteration), interval_s=interval_s)
        self.iteration = iteration


def _plan_delta(iteration: int, offset: int, text: str) -> PlanDelta:
    return PlanDelta(iteration=iteration, offset=offset, text=text)
