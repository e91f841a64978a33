"""The ``Memory`` interface and the records it stores.

A memory keeps, per ``conversation_id``: the conversation's messages, documents (the
seed's "elements", stored as token-bounded chunks), knowledge (facts and notes) and a
keyword index over all three. It also keeps runs and their events for the server, and a
small key/value table. Every method has an ``a``-prefixed async twin that runs the sync
one in a worker thread, so brains can await memory without blocking their event loop.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self

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

    def to_message(self) -> TextMessage:
        """The item as a :class:`TextMessage` (role ``"user"`` when it has none)."""
        return TextMessage(
            content=self.text,
            role=self.role or "user",
            additional_kwargs=dict(self.metadata),
            created_at=self.created_at,
        )


@dataclass(frozen=True)
class RunRecord:
    """A run as the server persists it: its status and a JSON-able ``data`` dict."""

    run_id: str
    conversation_id: str | None
    status: str
    data: dict[str, Any]
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class RunEventRecord:
    """One event of a run, in ``seq`` order."""

    run_id: str
    seq: int
    event: dict[str, Any]
    created_at: float


class Memory(ABC):
    """Conversation, documents, knowledge, keyword index, runs and key/values.

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

    # -- runs and key/values -----------------------------------------------------------

    @abstractmethod
    def save_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        """Create or replace a run's status and data (its creation time is kept)."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or ``None`` when it was never saved."""

    @abstractmethod
    def append_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        """Store event ``seq`` of a run; a second event with the same ``seq`` is an error."""

    @abstractmethod
    def run_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        """The run's events with ``seq > after_seq``, in ``seq`` order."""

    @abstractmethod
    def list_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        """Runs, newest first; only the conversation's when ``conversation_id`` is given."""

    @abstractmethod
    def put_value(self, key: str, value: Any) -> None:
        """Store a JSON-able value under ``key``, replacing any previous one."""

    @abstractmethod
    def get_value(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""

    @abstractmethod
    def delete_value(self, key: str) -> bool:
        """Remove ``key``; ``True`` when it existed."""

    def close(self) -> None:  # noqa: B027 - optional for implementations without resources
        """Release the store's resources."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- async twins -------------------------------------------------------------------

    async def acommit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        return await asyncio.to_thread(self.commit_message, conversation_id, message, role)

    async def aadd_document(
        self,
        conversation_id: str,
        text: str,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    ) -> int:
        return await asyncio.to_thread(
            self.add_document, conversation_id, text, source, metadata, chunk_tokens
        )

    async def aadd_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        return await asyncio.to_thread(self.add_knowledge, conversation_id, text, metadata)

    async def amessages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        return await asyncio.to_thread(self.messages, conversation_id, limit)

    async def asearch(
        self,
        query: str,
        conversation_id: str | None = None,
        kinds: Sequence[MemoryKind] = ALL_KINDS,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
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

    async def asave_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        await asyncio.to_thread(self.save_run, run_id, conversation_id, status, data)

    async def aget_run(self, run_id: str) -> RunRecord | None:
        return await asyncio.to_thread(self.get_run, run_id)

    async def aappend_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        await asyncio.to_thread(self.append_run_event, run_id, seq, event)

    async def arun_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        return await asyncio.to_thread(self.run_events, run_id, after_seq)

    async def alist_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        return await asyncio.to_thread(self.list_runs, conversation_id, limit)

    async def aput_value(self, key: str, value: Any) -> None:
        await asyncio.to_thread(self.put_value, key, value)

    async def aget_value(self, key: str, default: Any = None) -> Any:
        return await asyncio.to_thread(self.get_value, key, default)

    async def adelete_value(self, key: str) -> bool:
        return await asyncio.to_thread(self.delete_value, key)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)
