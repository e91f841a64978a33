"""Stopping a run: abort requests from any task or thread.

:class:`RunControl` is how ``DCBrain.abort()`` reaches the run in progress: the request
is checked between the run's steps, and the LLM call or plan in flight is cancelled.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from dcbrain.brain.budget import llm_phase
from dcbrain.events import LLMPhase
from dcbrain.exceptions import AbortRequested as AbortRequested

T = TypeVar("T")


class RunControl:
    """Abort requests for the run in progress of one brain; callable from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = False
        self._abort_requested = False
        self._inflight: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """A run began on ``loop``; from now on :meth:`request_abort` reaches it (one
        asked before is kept: the run stops at its first check)."""
        with self._lock:
            self._active, self._loop = True, loop

    def finish(self) -> None:
        with self._lock:
            self._active = self._abort_requested = False
            self._inflight = self._loop = None

    def request_abort(self) -> bool:
        """Ask the run to stop and cancel its work in flight; ``False`` while it is not
        running (asked before it starts, the request is kept for it)."""
        with self._lock:
            self._abort_requested = True
            if not self._active:
                return False
            inflight, loop = self._inflight, self._loop
        if inflight is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(inflight.cancel)
        return True

    def check(self) -> None:
        """Raise :class:`AbortRequested` if an abort was requested."""
        if self._abort_requested:
            raise AbortRequested

    def abort_asked(self) -> bool:
        """Whether an abort was requested: a plan's host calls ask it before they start
        and as they end, so none starts once :meth:`request_abort` has returned."""
        return self._abort_requested

    async def interruptible(self, phase: LLMPhase, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` as a task an abort can cancel; LLM calls are tagged ``phase``."""
        token = llm_phase.set(phase)
        try:
            task = asyncio.ensure_future(work)
        finally:
            llm_phase.reset(token)
        with self._lock:
            self._inflight = task
            if self._abort_requested:
                task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._abort_requested and not (current is not None and current.cancelling()):
                raise AbortRequested from None
            raise
        except Exception:
            if self._abort_requested:  # it stopped for the abort before it was cancelled
                raise AbortRequested from None
            raise
        finally:
            with self._lock:
                self._inflight = None
            # a failed task holds its error, whose traceback holds this frame: without the
            # task, the two are freed by reference counting once the error is handled
            del task
