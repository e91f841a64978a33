"""``PostgresMemory``: conversation memory in PostgreSQL, shared by every worker.

With workers on several machines, the runs of one conversation execute wherever a worker
is free: their memory (the conversation so far, documents, knowledge) has to be where all
of them read and write it. The tables live next to the runs' (``dcbrain_memory_*``) in the
database given with ``--db``; keyword search is PostgreSQL's full-text search (a GIN index
on a tsvector of the words dcbrain splits, ranked by ``ts_rank``) with the same rules as
:class:`~dcbrain.memory.SQLiteMemory`: plain words, CJK text as two-character phrases,
very frequent words left out.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

import snowballstemmer

from dcbrain.durable._pg import Connections
from dcbrain.exceptions import TFMemoryError
from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory._chunking import split_text
from dcbrain.memory._frequent import DEFAULT_FREQUENT_TERM_SHARE, FrequentTerms
from dcbrain.memory._fts import index_words
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
from dcbrain.memory.base import ALL_KINDS, DEFAULT_CHUNK_TOKENS, Memory, MemoryItem, MemoryKind
from dcbrain.messages import TextMessage
from dcbrain.values.jsonsafe import dumps

if TYPE_CHECKING:
    import psycopg

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS dcbrain_memory_documents (
    id BIGSERIAL PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    source TEXT,
    metadata TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS dcbrain_memory_items (
    id BIGSERIAL PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    role TEXT,
    source TEXT,
    document_id BIGINT,
    chunk_index INTEGER,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    entry_tokens INTEGER,
    hit_tokens INTEGER,
    body TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS dcbrain_memory_items_by_conversation
    ON dcbrain_memory_items (conversation_id, kind, id);
CREATE INDEX IF NOT EXISTS dcbrain_memory_items_body
    ON dcbrain_memory_items USING GIN (body);
"""
_PORTER: Final = snowballstemmer.stemmer("porter")
_MAX_POSITION: Final = 16383  # PostgreSQL's largest word position
_MAX_WORD: Final = 512  # longer words are not indexed (PostgreSQL's limit is 2 KB)
_SCHEMA_LOCK_ID: Final = 0x6463_6D65  # "dcme": one process creates the tables at a time

_COLUMNS: Final = selected()
_INSERT: Final = (
    f"INSERT INTO dcbrain_memory_items ({', '.join(STORED_COLUMNS)}, body) "
    f"VALUES ({', '.join(['%s'] * len(STORED_COLUMNS))}, %s::tsvector) RETURNING id"
)


@lru_cache(maxsize=65_536)
def _lexeme(word: str) -> str:
    """A word as it is indexed and searched: diacritics removed, Porter-stemmed (what
    SQLite's ``porter unicode61 remove_diacritics 2`` tokenizer does); ``""``: not
    indexed (nothing left, or longer than PostgreSQL takes)."""
    if len(word) > _MAX_WORD:
        return ""
    if len(word) == 1 and not word.isascii():  # a CJK character
        return word
    folded = "".join(c for c in unicodedata.normalize("NFKD", word)
                     if not unicodedata.combining(c))
    return str(_PORTER.stemWord(folded.lower()))


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _tsvector(text: str) -> str:
    """``text`` as tsvector input: our words, their positions; PostgreSQL's parser (which
    depends on the database's locale, and reads ``a.b`` as a host name) is not used."""
    return " ".join(f"{_quoted(lexeme)}:{min(position, _MAX_POSITION)}"
                    for position, lexeme in enumerate(map(_lexeme, index_words(text)), start=1)
                    if lexeme)


def _tsquery(term: str) -> str:
    """A query term (``"word"``, or ``"a b"`` for a CJK pair) as tsquery input.

    Every word is a quoted lexeme: nothing in the user's text is tsquery syntax.
    """
    return " <-> ".join(_quoted(lexeme) for lexeme in map(_lexeme, term.strip('"').split())
                        if lexeme)


class PostgresMemory(Memory):
    """Memory in the PostgreSQL database at ``url`` (``postgresql://…``), for many processes.

    ``frequent_term_share`` as for :class:`~dcbrain.memory.SQLiteMemory`;
    ``outage_wait_s`` as for :class:`~dcbrain.durable.PostgresDurableStore`.
    """

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 4,
        frequent_term_share: float | None = DEFAULT_FREQUENT_TERM_SHARE,
        outage_wait_s: float = 0.0,
    ) -> None:
        self.connections = Connections(url, max_connections=max_connections,
                                       outage_wait_s=outage_wait_s)
        self._frequent = FrequentTerms(frequent_term_share)
        self._closed = False
        with self.connections.use() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_ID,))
            conn.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"PostgresMemory({self.connections.where!r})"

    def close(self) -> None:
        self._closed = True
        self.connections.close()

    def _use(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        if self._closed:
            raise TFMemoryError(f"the memory on {self.connections.where!r} is closed")
        return self.connections.use()

    # -- conversation, documents, knowledge --------------------------------------------

    def _insert(self, conn: psycopg.Connection[Any], item: MemoryItem) -> int:
        row = conn.execute(_INSERT, (*stored_values(item), _tsvector(item.text))).fetchone()
        assert row is not None
        return int(row[0])

    def commit_message(
        self, conversation_id: str, message: TextMessage | str, role: str = "user"
    ) -> int:
        with self._use() as conn:
            return self._insert(conn, message_item(conversation_id, message, role))

    def add_document(self, conversation_id: str, text: str, source: str | None = None,
                     metadata: dict[str, Any] | None = None,
                     chunk_tokens: int = DEFAULT_CHUNK_TOKENS) -> int:
        chunks = split_text(text, chunk_tokens, cl100k_base_length)
        now = time.time()
        with self._use() as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO dcbrain_memory_documents (conversation_id, source, metadata, "
                "created_at) VALUES (%s, %s, %s, %s) RETURNING id",
                (conversation_id, source, dumps(metadata or {}), now),
            ).fetchone()
            assert row is not None
            document_id = int(row[0])
            for item in chunk_items(conversation_id, chunks, document_id=document_id,
                                    source=source, metadata=metadata, created_at=now):
                self._insert(conn, item)
            return document_id

    def add_knowledge(
        self, conversation_id: str, text: str, metadata: dict[str, Any] | None = None
    ) -> int:
        with self._use() as conn:
            return self._insert(conn, knowledge_item(conversation_id, text, metadata))

    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        with self._use() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM dcbrain_memory_items WHERE conversation_id = %s "
                "AND kind = 'message' ORDER BY id DESC LIMIT %s", (conversation_id, limit),
            ).fetchall()
        return [item_from_row(row).to_message() for row in reversed(rows)]

    def recent(self, conversation_id: str, kind: MemoryKind, *, limit: int = 100,
               before_id: int | None = None) -> list[MemoryItem]:
        with self._use() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM dcbrain_memory_items WHERE conversation_id = %s "
                "AND kind = %s AND id < %s ORDER BY id DESC LIMIT %s",
                (conversation_id, kind, before_id if before_id is not None else 2**63 - 1,
                 limit),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def search(self, query: str, conversation_id: str | None = None,
               kinds: Sequence[MemoryKind] = ALL_KINDS, limit: int = 10,
               offset: int = 0) -> list[MemoryItem]:
        terms, kinds = search_inputs(query, kinds, limit)
        if not terms:
            return []
        conditions = ["body @@ q.query"]
        params: list[Any] = []
        if conversation_id is not None:
            conditions.append("conversation_id = %s")
            params.append(conversation_id)
        if set(kinds) != set(ALL_KINDS):
            conditions.append("kind = ANY(%s)")
            params.append(list(kinds))
        sql = (
            f"SELECT {_COLUMNS}, ts_rank(body, q.query) AS score "
            "FROM dcbrain_memory_items, CAST(%s AS tsquery) AS q(query) "
            f"WHERE {' AND '.join(conditions)} ORDER BY score DESC, id DESC LIMIT %s OFFSET %s"
        )
        with self._use() as conn:
            chosen = self._frequent.informative(
                terms, lambda: _index_size(conn), lambda term, cap: _matches(conn, term, cap))
            tsquery = " | ".join(filter(None, map(_tsquery, chosen)))
            if not tsquery:
                return []
            rows = conn.execute(sql, [tsquery, *params, limit, offset]).fetchall()
        return [item_from_row(row, score=float(row[SCORE_COLUMN])) for row in rows]

    def delete_conversation(self, conversation_id: str) -> int:
        with self._use() as conn, conn.transaction():
            deleted = conn.execute(
                "DELETE FROM dcbrain_memory_items WHERE conversation_id = %s", (conversation_id,)
            ).rowcount
            conn.execute("DELETE FROM dcbrain_memory_documents WHERE conversation_id = %s",
                         (conversation_id,))
        self._frequent.forget()
        return deleted


def _index_size(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT max(id) FROM dcbrain_memory_items").fetchone()
    return int(row[0] or 0) if row is not None else 0


def _matches(conn: psycopg.Connection[Any], term: str, limit: int) -> int:
    """Items matching ``term``, up to ``limit`` (a GIN index scan stopped at ``limit``)."""
    query = _tsquery(term)
    if not query:
        return 0
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM dcbrain_memory_items "
        "WHERE body @@ %s::tsquery LIMIT %s) AS hits", (query, limit),
    ).fetchone()
    return int(row[0]) if row is not None else 0
