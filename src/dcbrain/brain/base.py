"""BaseBrain: what every brain shares — memory, Neural, subscribers, sync and streaming runs."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcbrain._jsonsafe import dumps
from dcbrain._sync import run_sync
from dcbrain._text import encodable
from dcbrain.events import Event
from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, MemoryChunkSize
from dcbrain.messages import TextMessage

if TYPE_CHECKING:
    from dcbrain.brain.context import BrainResult
    from dcbrain.memory import Memory, Recall
    from dcbrain.neural import Neural

EventCallback = Callable[[Event], None]


class BaseBrain(ABC):
    """A brain answers questions of conversations, remembers them and reports what it does.

    ``memory`` (optional) is where user inputs and answers are committed and what planning
    recalls from, within ``memory_chunk_size``; ``neural`` (optional) is the signal bus
    the brain registers with. ``trace_path`` appends every event of every run to a JSONL
    file.
    """

    def __init__(
        self,
        *,
        memory: Memory | None = None,
        memory_chunk_size: MemoryChunkSize = DEFAULT_MEMORY_CHUNK_SIZE,
        neural: Neural | None = None,
        trace_path: str | Path | None = None,
    ) -> None:
        self.memory = memory
        self.memory_chunk_size = memory_chunk_size
        self.neural: Neural | None = None
        self.trace_path = trace_path
        self._subscribers: list[EventCallback] = []
        self._pending_neural = neural

    # -- events ------------------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Callable[[], None]:
        """Call ``callback(event)`` for every event of every later run; returns an unsubscribe.

        Callbacks run synchronously where the event happens (possibly a plan's worker
        thread): keep them short. One that raises is skipped for that event and reported
        on the run (an ``error`` event with ``source: "subscriber"``, and the log).
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    # -- Neural ------------------------------------------------------------------------

    def connect_to_neural(self, neural: Neural) -> None:
        """Register this brain's parts with ``neural`` and use it for new-input checks."""
        self.neural = neural
        if self.memory is not None:
            neural.register("memory", "memory", self.memory)

    # -- memory ------------------------------------------------------------------------

    async def acommit_message(self, conversation_id: str, message: TextMessage) -> None:
        """Store ``message`` in the conversation (nothing happens without memory)."""
        if self.memory is not None:
            await self.memory.acommit_message(conversation_id, storable(message))

    def commit_message(self, conversation_id: str, message: TextMessage) -> None:
        if self.memory is not None:
            self.memory.commit_message(conversation_id, storable(message))

    async def arecall(self, conversation_id: str, current_input: str) -> Recall | None:
        """What memory holds for planning ``current_input`` (``None`` without memory)."""
        if self.memory is None:
            return None
        return await self.memory.arecall(conversation_id, current_input, self.memory_chunk_size)

    # -- running -----------------------------------------------------------------------

    @abstractmethod
    async def async_run(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        on_event: EventCallback | None = None,
        run_id: str | None = None,
        output_type: Any = None,
    ) -> BrainResult:
        """Answer ``question`` in ``conversation_id``; ``on_event`` sees this run's events,
        ``run_id`` names the run (default: a new id), ``output_type`` is the type of the
        result's ``output`` (default: the brain's)."""

    def run(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        run_id: str | None = None,
        output_type: Any = None,
    ) -> BrainResult:
        """Blocking :meth:`async_run`; usable with or without a running event loop."""
        return run_sync(lambda: self.async_run(question, conversation_id, run_id=run_id,
                                               output_type=output_type))

    async def astream(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        run_id: str | None = None,
        output_type: Any = None,
    ) -> AsyncIterator[Event]:
        """Run ``question`` and yield its :class:`~dcbrain.events.Event` objects live.

        The last event is ``final`` (its data is the result without the events). If the
        run raises (a timeout's :class:`~dcbrain.exceptions.TFBrainError`, new user
        input), the error is raised after the events that came before it. Leaving the
        loop early cancels the run.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        def deliver(event: Event) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        task = asyncio.ensure_future(
            self.async_run(question, conversation_id, on_event=deliver, run_id=run_id,
                           output_type=output_type)
        )
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


def answer_text(value: Any) -> str:
    """An answer as the text committed to memory."""
    if isinstance(value, str):
        return value
    return dumps(value)


def storable(message: TextMessage) -> TextMessage:
    """``message`` with text a store can encode (a plan's answer may hold any string)."""
    return replace(message, content=encodable(message.content),
                   additional_kwargs=encodable(message.additional_kwargs))
