"""``SQLiteMemory``: the embedded default store, one SQLite file (FTS5 for keywords).

It is a :class:`Memory` and a :class:`RunStore` on the same file, so one path is all the
default setup needs. Safe for many brains in one process (one connection per thread)
and for several processes on one file (WAL, ``busy_timeout``, writes in
``BEGIN IMMEDIATE`` transactions). A commit that returned is on disk
(``synchronous=FULL``): a process killed mid-write loses at most the write that had not
returned yet.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Final

from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory._chunking import split_text
from dcbrain.memory._frequent import DEFAULT_FREQUENT_TERM_SHARE, FrequentTerms
from dcbrain.memory._fts import index_text
from dcbrain.memory._rows import (
    SCORE_COLUMN,
    STORED_COLUMNS,
    chunk_items,
    item_from_row,
    knowledge_item,
    message_item,
    search_inputs,
    selected,
    stored_values,
)
from dcbrain.memory._sqlite_db import SCHEMA_VERSION
from dcbrain.memory.base import (
    ALL_KINDS,
    DEFAULT_CHUNK_TOKENS,
    Memory,
    MemoryItem,
    MemoryKind,
)
from dcbrain.memory.sqlite_runs import SQLiteRunStore
from dcbrain.messages import TextMessage
from dcbrain.values.jsonsafe import dumps

__all__ = ["SCHEMA_VERSION", "SQLiteMemory"]

_ITEM_COLUMNS: Final = selected("items")
_INSERT: Final = (f"INSERT INTO items ({', '.join(STORED_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * len(STORED_COLUMNS))})")


def _index_size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT max(id) FROM items").fetchone()[0] or 0)


def _matches(conn: sqlite3.Connection, term: str, limit: int) -> int:
    # The LIMIT stops the scan of a frequent term's postings early.
    return int(conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM items_fts WHERE items_fts MATCH ? LIMIT ?)",
        (term, limit),
    ).fetchone()[0])


class SQLiteMemory(SQLiteRunStore, Memory):
    """Memory and run store in one SQLite file; ``":memory:"`` keeps it in this process only.

    ``busy_timeout`` (seconds) is how long a write waits for another connection's.
    Keyword search leaves out a query word found in more than ``frequent_term_share`` of
    all items (and in more than 200), unless every word of the query is that frequent;
    ``None`` searches with every word.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        frequent_term_share: float | None = DEFAULT_FREQUENT_TERM_SHARE,
    ) -> None:
        self._frequent = FrequentTerms(frequent_term_share)
        super().__init__(path, busy_timeout=busy_timeout)

    # -- conversation, documents, knowledge --------------------------------------------

    def _insert_item(self, conn: sqlite3.Connection, item: MemoryItem) -> int:
        """Store ``item`` (its ``id`` is ignored) with its token counts; returns its id."""
        cursor = conn.execute(_INSERT, stored_values(item))
        item_id = cursor.lastrowid
        assert item_id is not None
        conn.execute(
            "INSERT INTO items_fts (rowid, body) VALUES (?, ?)", (item_id, index_text(item.text))
        )
        return item_id

    def commit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        with self._db.write() as conn:
            return self._insert_item(conn, message_item(conversation_id, message, role))

    def add_document(self, conversation_id: str, text: str, source: str | None = None,
                     metadata: dict[str, Any] | None = None,
                     chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> int:
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
            for item in chunk_items(conversation_id, chunks, document_id=document_id,
                                    source=source, metadata=metadata, created_at=now):
                self._insert_item(conn, item)
            return document_id

    def add_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        with self._db.write() as conn:
            return self._insert_item(conn, knowledge_item(conversation_id, text, metadata))

    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        with self._db.use() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE conversation_id = ? "
                "AND kind = 'message' ORDER BY id DESC LIMIT ?",
                (conversation_id, -1 if limit is None else limit),
            ).fetchall()
        return [item_from_row(row).to_message() for row in reversed(rows)]

    def recent(self, conversation_id: str, kind: MemoryKind, *, limit: int = 100,
               before_id: int | None = None) -> list[MemoryItem]:
        with self._db.use() as conn:
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM items WHERE conversation_id = ? AND kind = ? "
                "AND id < ? ORDER BY id DESC LIMIT ?",
                (conversation_id, kind, before_id if before_id is not None else 2**63 - 1, limit),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def search(self, query: str, conversation_id: str | None = None,
               kinds: Sequence[MemoryKind] = ALL_KINDS, limit: int = 10,
               offset: int = 0) -> list[MemoryItem]:
        terms, kinds = search_inputs(query, kinds, limit)
        if not terms:
            return []
        conditions: list[str] = []
        params: list[Any] = [None]  # the MATCH query, once the terms are chosen
        if conversation_id is not None:
            conditions.append("conversation_id = ?")
            params.append(conversation_id)
        some_kinds = set(kinds) != set(ALL_KINDS)
        if some_kinds:
            conditions.append(f"kind IN ({', '.join('?' * len(kinds))})")
            params.extend(kinds)
        # Probing a small index beats reading each matching row.
        table = "items"
        if conversation_id is not None:
            index = "items_by_conversation" if some_kinds else "items_conversation_by_id"
            table = f"items INDEXED BY {index}"
        where = ""
        if conditions:
            where = (f"AND EXISTS (SELECT 1 FROM {table} WHERE {' AND '.join(conditions)} "
                     "AND id = items_fts.rowid)")
        # Rank in the index alone; only the page's rows are read from ``items``.
        sql = (
            f"SELECT {_ITEM_COLUMNS}, ranked.score FROM (SELECT rowid AS id, "
            f"bm25(items_fts) AS score FROM items_fts WHERE items_fts MATCH ? {where} "
            "ORDER BY score, rowid DESC LIMIT ? OFFSET ?) AS ranked "
            "JOIN items ON items.id = ranked.id ORDER BY ranked.score, items.id DESC"
        )
        params += [limit, offset]
        with self._db.use() as conn:
            params[0] = " OR ".join(self._frequent.informative(
                terms, lambda: _index_size(conn), lambda term, limit: _matches(conn, term, limit)))
            rows = conn.execute(sql, params).fetchall()
        return [item_from_row(row, score=-row[SCORE_COLUMN]) for row in rows]

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
        self._frequent.forget()
        return deleted
