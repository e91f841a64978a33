"""BaseBrain: what a brain has beside its planning — memory, Neural and event subscribers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcbrain.events import Event
from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, MemoryChunkSize
from dcbrain.messages import TextMessage
from dcbrain.values.jsonsafe import dumps
from dcbrain.values.text import encodable

if TYPE_CHECKING:
    from dcbrain.memory import Memory, Recall
    from dcbrain.neural import Neural

EventCallback = Callable[[Event], None]


class BaseBrain:
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


def answer_text(value: Any) -> str:
    """An answer as the text committed to memory."""
    if isinstance(value, str):
        return value
    return dumps(value)


def storable(message: TextMessage) -> TextMessage:
    """``message`` with text a store can encode (a plan's answer may hold any string)."""
    return replace(message, content=encodable(message.content),
                   additional_kwargs=encodable(message.additional_kwargs))
