"""The ``Memory`` interface and the records it stores.

A memory keeps, per ``conversation_id``: the conversation's messages, documents (the
brain's "elements", stored as token-bounded chunks), knowledge (facts and notes) and a
keyword index over all three — what planning recalls. Runs, their events and key/values
are a separate interface, :class:`~dcbrain.memory.run_store.RunStore`. Every method has
an ``a``-prefixed async twin that runs the sync one in a worker thread, so brains can
await memory without blocking their event loop.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from dcbrain.memory._closing import ClosableStore
from dcbrain.messages import TextMessage

if TYPE_CHECKING:
    from dcbrain.memory.recall import MemoryChunkSize, Recall

MemoryKind = Literal["message", "document", "knowledge"]
ALL_KINDS: Final[tuple[MemoryKind, ...]] = ("message", "document", "knowledge")
DEFAULT_CHUNK_TOKENS: Final = 512


@dataclass(frozen=True)
class MemoryItem:
    """One stored message, document chunk or piece of knowledge.

    ``score`` is set by searches: higher is more relevant (negated FTS5 bm25).
    For messages ``metadata`` holds the message's ``additional_kwargs``.
    ``entry_tokens`` and ``hit_tokens`` are the cl100k token counts of the item's recall
    entry in its own section and as a keyword hit, when the store counted them as it
    stored the item (``None``: recall counts them itself).
    """

    kind: MemoryKind
    id: int
    conversation_id: str
    text: str
    created_at: float
    role: str | None = None
    source: str | None = None
    document_id: int | None = None
    chunk_index: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float | None = None
    entry_tokens: int | None = None
    hit_tokens: int | None = None

    def to_message(self) -> TextMessage:
        """The item as a :class:`TextMessage` (role ``"user"`` when it has none)."""
        return TextMessage(
            content=self.text,
            role=self.role or "user",
            additional_kwargs=dict(self.metadata),
            created_at=self.created_at,
        )


class Memory(ClosableStore, ABC):
    """Conversation, documents, knowledge and a keyword index, recalled for planning.

    A store of another kind (a vector store, a remote service) implements the seven
    abstract methods; ``search`` may rank by any relevance, best first.

    Implementations must be safe to share between threads and brains of one process.
    """

    # -- conversation, documents, knowledge -------------------------------------------

    @abstractmethod
    def commit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        """Store a message of the conversation; ``role`` applies to plain strings only.

        Returns the stored item's id.
        """

    @abstractmethod
    def add_document(
        self,
        conversation_id: str,
        text: str,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    ) -> int:
        """Store a document as chunks of at most ``chunk_tokens`` cl100k tokens.

        Returns the document id shared by its chunks.
        """

    @abstractmethod
    def add_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        """Store a fact or note; returns its id."""

    @abstractmethod
    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        """The conversation's messages in chronological order; the last ``limit`` if given."""

    @abstractmethod
    def recent(
        self,
        conversation_id: str,
        kind: MemoryKind,
        *,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[MemoryItem]:
        """Items of one kind, newest first, older than ``before_id`` when given."""

    @abstractmethod
    def search(
        self,
        query: str,
        conversation_id: str | None = None,
        kinds: Sequence[MemoryKind] = ALL_KINDS,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """Keyword search, most relevant first.

        ``query`` is plain user text: any characters are allowed and none is treated
        as search syntax. A query without words returns no items.
        """

    @abstractmethod
    def delete_conversation(self, conversation_id: str) -> int:
        """Remove the conversation's messages, documents and knowledge; returns the count."""

    def recall(
        self,
        conversation_id: str,
        current_input: str,
        memory_chunk_size: MemoryChunkSize | None = None,
    ) -> Recall:
        """What to show the planner: recent turns and relevant items within budgets.

        See :func:`dcbrain.memory.recall.recall` for the rules.
        """
        from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, recall

        size = DEFAULT_MEMORY_CHUNK_SIZE if memory_chunk_size is None else memory_chunk_size
        return recall(self, conversation_id, current_input, size)

    # -- async twins -------------------------------------------------------------------

    async def acommit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        return await asyncio.to_thread(self.commit_message, conversation_id, message, role)

    async def aadd_document(self, conversation_id: str, text: str, source: str | None = None,
                            metadata: dict[str, Any] | None = None,
                            chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> int:
        return await asyncio.to_thread(
            self.add_document, conversation_id, text, source, metadata, chunk_tokens
        )

    async def aadd_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        return await asyncio.to_thread(self.add_knowledge, conversation_id, text, metadata)

    async def amessages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        return await asyncio.to_thread(self.messages, conversation_id, limit)

    async def asearch(self, query: str, conversation_id: str | None = None,
                      kinds: Sequence[MemoryKind] = ALL_KINDS, limit: int = 10,
                      offset: int = 0) -> list[MemoryItem]:
        return await asyncio.to_thread(self.search, query, conversation_id, kinds, limit, offset)

    async def arecall(
        self,
        conversation_id: str,
        current_input: str,
        memory_chunk_size: MemoryChunkSize | None = None,
    ) -> Recall:
        return await asyncio.to_thread(
            self.recall, conversation_id, current_input, memory_chunk_size
        )

    async def adelete_conversation(self, conversation_id: str) -> int:
        return await asyncio.to_thread(self.delete_conversation, conversation_id)
