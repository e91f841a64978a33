"""What the SQL memories (SQLite, PostgreSQL) share: items as rows, and items to store.

Both keep an item in the same columns, in the same order (:data:`ITEM_COLUMNS` to read,
:data:`STORED_COLUMNS` to write), so one function turns a row into a
:class:`~dcbrain.memory.base.MemoryItem` and one turns an item into the values to insert.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Final

from dcbrain.memory._fts import query_terms
from dcbrain.memory.base import ALL_KINDS, MemoryItem, MemoryKind
from dcbrain.memory.recall import count_entry_tokens
from dcbrain.messages import TextMessage, as_message
from dcbrain.values.jsonsafe import dumps

#: The columns a read selects, in :func:`item_from_row`'s order (the score may follow).
ITEM_COLUMNS: Final = ("id", "conversation_id", "kind", "content", "created_at", "role",
                       "source", "document_id", "chunk_index", "metadata", "entry_tokens",
                       "hit_tokens")
#: The columns an insert writes, in :func:`stored_values`' order.
STORED_COLUMNS: Final = ("conversation_id", "kind", "role", "source", "document_id",
                         "chunk_index", "content", "metadata", "created_at", "entry_tokens",
                         "hit_tokens")
#: Where the score is in a search row (right after :data:`ITEM_COLUMNS`).
SCORE_COLUMN: Final = len(ITEM_COLUMNS)


def selected(table: str = "") -> str:
    """:data:`ITEM_COLUMNS` for a SELECT, each prefixed with ``table.`` if given."""
    prefix = f"{table}." if table else ""
    return ", ".join(prefix + column for column in ITEM_COLUMNS)


def item_from_row(row: Sequence[Any], score: float | None = None) -> MemoryItem:
    """The item of a row read with :data:`ITEM_COLUMNS`."""
    item_id, conversation_id, kind, content, created_at = row[:5]
    role, source, document_id, chunk_index, metadata, entry_tokens, hit_tokens = row[5:12]
    return MemoryItem(
        kind=kind, id=item_id, conversation_id=conversation_id, text=content,
        created_at=created_at, role=role, source=source, document_id=document_id,
        chunk_index=chunk_index, metadata=json.loads(metadata) if metadata != "{}" else {},
        score=score, entry_tokens=entry_tokens, hit_tokens=hit_tokens,
    )


def stored_values(item: MemoryItem) -> tuple[Any, ...]:
    """The values of :data:`STORED_COLUMNS` for ``item``, its token counts included."""
    entry_tokens, hit_tokens = count_entry_tokens(item)
    return (item.conversation_id, item.kind, item.role, item.source, item.document_id,
            item.chunk_index, item.text, dumps(item.metadata), item.created_at, entry_tokens,
            hit_tokens)


def message_item(conversation_id: str, message: TextMessage | str, role: str) -> MemoryItem:
    """A message to commit (``role`` applies to a plain string only)."""
    msg = as_message(message, role=role)
    return MemoryItem(kind="message", id=0, conversation_id=conversation_id,
                      text=msg.content, created_at=msg.created_at, role=msg.role,
                      metadata=msg.additional_kwargs)


def knowledge_item(conversation_id: str, text: str,
                   metadata: dict[str, Any] | None) -> MemoryItem:
    return MemoryItem(kind="knowledge", id=0, conversation_id=conversation_id,
                      text=text.strip(), created_at=time.time(), metadata=metadata or {})


def chunk_items(conversation_id: str, chunks: Sequence[str], *, document_id: int,
                source: str | None, metadata: dict[str, Any] | None,
                created_at: float) -> list[MemoryItem]:
    """The chunks of document ``document_id``, in order."""
    return [MemoryItem(kind="document", id=0, conversation_id=conversation_id, text=chunk,
                       created_at=created_at, source=source, document_id=document_id,
                       chunk_index=index, metadata=metadata or {})
            for index, chunk in enumerate(chunks)]


def search_inputs(
    query: str, kinds: Sequence[MemoryKind], limit: int
) -> tuple[list[str], list[MemoryKind]]:
    """The query's terms and the known kinds asked for; no terms: nothing to search."""
    terms = query_terms(query)
    known = [kind for kind in kinds if kind in ALL_KINDS]
    if not known or limit <= 0:
        return [], known
    return terms, known
