"""Stopping a run: abort requests from any task or thread, and the stops the machine expects.

:class:`RunControl` is how ``DCBrain.abort()`` reaches the run in progress: the request
is checked between the run's steps, and the LLM call or plan in flight is cancelled.
:class:`BrainMachine` keeps the expected stops (an abort, new user input) away from the
``transitions`` library, which logs every exception passing through a trigger as an error.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from transitions import EventData
from transitions.extensions.asyncio import AsyncMachine

from dcbrain.brain.budget import llm_phase
from dcbrain.events import LLMPhase
from dcbrain.exceptions import AbortRequested as AbortRequested
from dcbrain.exceptions import RunSuspended, TFUserNewInputError

T = TypeVar("T")


#: How a run stops by design from inside a machine callback (a suspended run goes on
#: in another execution).
EXPECTED_STOPS: tuple[type[BaseException], ...] = (AbortRequested, TFUserNewInputError,
                                                   RunSuspended)


class BrainMachine(AsyncMachine):
    """The brain's machine; the model's own ``abort()`` method stays, the event is fired
    with ``trigger("abort")``.

    An expected stop raised in a callback is held back as :attr:`stop`: the callbacks
    left in that trigger are skipped, as after a raise, and the caller re-raises it once
    the trigger returned (:meth:`take_stop`).
    """

    stop: BaseException | None = None

    def _checked_assignment(self, model: Any, name: str, func: Any) -> None:
        if name == "abort" and callable(getattr(model, name, None)):
            return
        super()._checked_assignment(model, name, func)

    # The stubs type this static and sync; the async machine awaits what it returns.
    def resolve_callable(  # type: ignore[override]
        self, func: Any, event_data: EventData
    ) -> Callable[..., Any]:
        resolved = super().resolve_callable(func, event_data)

        async def holding_back_stops(*args: Any, **kwargs: Any) -> Any:
            if self.stop is not None:
                return False  # a skipped condition halts the transition
            try:
                outcome = resolved(*args, **kwargs)
                return await outcome if inspect.isawaitable(outcome) else outcome
            except EXPECTED_STOPS as exc:
                self.stop = exc
                return False

        return holding_back_stops

    @staticmethod
    async def await_all(callables: list[Callable[[], Any]]) -> list[Any]:
        """Callbacks one after the other, in order (transitions gathers them as tasks).

        A run's callbacks never wait on each other, so running them as tasks bought
        nothing but a task and a loop round per callback: most of the machine's cost.
        """
        return [await callback() for callback in callables]

    def take_stop(self) -> BaseException | None:
        """The stop held back during the last trigger, if any (cleared)."""
        stop, self.stop = self.stop, None
        return stop


class RunControl:
    """Abort requests for the run in progress of one brain; callable from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = False
        self._abort_requested = False
        self._inflight: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """A run began on ``loop``; from now on :meth:`request_abort` reaches it."""
        with self._lock:
            self._active, self._abort_requested, self._loop = True, False, loop

    def finish(self) -> None:
        with self._lock:
            self._active = self._abort_requested = False
            self._inflight = self._loop = None

    def request_abort(self) -> bool:
        """Ask the run to stop and cancel its work in flight; ``False`` without a run."""
        with self._lock:
            if not self._active:
                return False
            self._abort_requested = True
            inflight, loop = self._inflight, self._loop
        if inflight is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(inflight.cancel)
        return True

    def check(self) -> None:
        """Raise :class:`AbortRequested` if an abort was requested."""
        if self._abort_requested:
            raise AbortRequested

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
        finally:
            with self._lock:
                self._inflight = None
