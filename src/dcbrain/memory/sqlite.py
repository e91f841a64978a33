"""``SQLiteMemory``: the embedded default store, one SQLite file (FTS5 for keywords).

It is a :class:`Memory` and a :class:`RunStore` on the same file, so one path is all the
default setup needs. Safe for many brains in one process (one connection per thread)
and for several processes on one file (WAL, ``busy_timeout``, writes in
``BEGIN IMMEDIATE`` transactions). A commit that returned is on disk
(``synchronous=FULL``): a process killed mid-write loses at most the write that had not
returned yet.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Final

from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory._chunking import split_text
from dcbrain.memory._fts import index_text, match_query
from dcbrain.memory._sqlite_db import SCHEMA_VERSION, dumps
from dcbrain.memory.base import (
    ALL_KINDS,
    DEFAULT_CHUNK_TOKENS,
    Memory,
    MemoryItem,
    MemoryKind,
)
from dcbrain.memory.sqlite_runs import SQLiteRunStore
from dcbrain.messages import TextMessage, as_message

__all__ = ["SCHEMA_VERSION", "SQLiteMemory"]

_ITEM_COLUMNS: Final = (
    "items.id, items.conversation_id, items.kind, items.content, items.created_at, "
    "items.role, items.source, items.document_id, items.chunk_index, items.metadata"
)


def _item(row: sqlite3.Row | tuple[Any, ...], score: float | None = None) -> MemoryItem:
    item_id, conversation_id, kind, content, created_at = row[:5]
    role, source, document_id, chunk_index, metadata = row[5:10]
    return MemoryItem(
        kind=kind,
        id=item_id,
        conversation_id=conversation_id,
        text=content,
        created_at=created_at,
        role=role,
        source=source,
        document_id=document_id,
        chunk_index=chunk_index,
        metadata=json.loads(metadata),
        score=score,
    )


class SQLiteMemory(SQLiteRunStore, Memory):
    """Memory and run store in one SQLite file; ``":memory:"`` keeps it in this process only.

    ``busy_timeout`` (seconds) is how long a write waits for another connection's.
    """

    # -- conversation, documents, knowledge --------------------------------------------

    def _insert_item(
        self,
        conn: sqlite3.Connection,
        conversation_id: str,
        kind: MemoryKind,
        content: str,
        *,
        created_at: float,
        role: str | None = None,
        source: str | None = None,
        document_id: int | None = None,
        chunk_index: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> int:
        cursor = conn.execute(
            "INSERT INTO items (conversation_id, kind, role, source, document_id, "
            "chunk_index, content, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                conversation_id,
                kind,
                role,
                source,
                document_id,
                chunk_index,
                content,
                dumps(metadata or {}),
                created_at,
            ),
        )
        item_id = cursor.lastrowid
        assert item_id is not None
        conn.execute(
            "INSERT INTO items_fts (rowid, body) VALUES (?, ?)", (item_id, index_text(content))
        )
        return item_id

    def commit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        msg = as_message(message, role=role)
        with self._db.write() as conn:
            return self._insert_item(
                conn,
                conversation_id,
                "message",
                msg.content,
                created_at=msg.created_at,
                role=msg.role,
                metadata=msg.additional_kwargs,
            )

    def add_document(
        self,
        conversation_id: str,
        text: str,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    ) -> int:
        chunks = split_text(text, chunk_tokens, cl100k_base_length)  # outside the write lock
        now = time.time()
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO documents (conversation_id, source, metadata, created_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation_id, source, dumps(metadata or {}), now),
            )
            document_id = cursor.lastrowid
            assert document_id is not None
            for index, chunk in enumerate(chunks):
                self._insert_item(
                    conn,
                    conversation_id,
                    "document",
                    chunk,
                    created_at=now,
                    source=source,
                    document_id=document_id,
                    chunk_index=index,
                    metadata=metadata,
                )
            return document_id

    def add_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        with self._db.write() as conn:
            return self._insert_item(
                conn,
                conversation_id,
                "knowledge",
                text.strip(),
                created_at=time.time(),
                metadata=metadata,
            )

    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        with self._db.use() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE conversation_id = ? "
                "AND kind = 'message' ORDER BY id DESC LIMIT ?",
                (conversation_id, -1 if limit is None else limit),
            ).fetchall()
        return [_item(row).to_message() for row in reversed(rows)]

    def recent(
        self,
        conversation_id: str,
        kind: MemoryKind,
        *,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[MemoryItem]:
        with self._db.use() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE conversation_id = ? AND kind = ? "
                "AND id < ? ORDER BY id DESC LIMIT ?",
                (conversation_id, kind, before_id if before_id is not None else 2**63 - 1, limit),
            ).fetchall()
        return [_item(row) for row in rows]

    def search(
        self,
        query: str,
        conversation_id: str | None = None,
        kinds: Sequence[MemoryKind] = ALL_KINDS,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
        fts_query = match_query(query)
        kinds = [kind for kind in kinds if kind in ALL_KINDS]
        if fts_query is None or not kinds or limit <= 0:
            return []
        sql = (
            f"SELECT {_ITEM_COLUMNS}, bm25(items_fts) AS score FROM items_fts "
            "JOIN items ON items.id = items_fts.rowid WHERE items_fts MATCH ? "
            f"AND items.kind IN ({', '.join('?' * len(kinds))})"
        )
        params: list[Any] = [fts_query, *kinds]
        if conversation_id is not None:
            sql += " AND items.conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY score, items.id DESC LIMIT ? OFFSET ?"
        params += [limit, offset]
        with self._db.use() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_item(row, score=-row[10]) for row in rows]

    def delete_conversation(self, conversation_id: str) -> int:
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM items_fts WHERE rowid IN "
                "(SELECT id FROM items WHERE conversation_id = ?)",
                (conversation_id,),
            )
            deleted = conn.execute(
                "DELETE FROM items WHERE conversation_id = ?", (conversation_id,)
            ).rowcount
            conn.execute("DELETE FROM documents WHERE conversation_id = ?", (conversation_id,))
            return deleted
