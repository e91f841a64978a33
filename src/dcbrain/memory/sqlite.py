"""``SQLiteMemory``: the embedded default store, one SQLite file (FTS5 for keywords).

Safe for many brains in one process (one connection per thread) and for several
processes on one file (WAL, ``busy_timeout``, writes in ``BEGIN IMMEDIATE``
transactions). A commit that returned is on disk (``synchronous=FULL``): a process
killed mid-write loses at most the write that had not returned yet.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from dcbrain.exceptions import TFMemoryError
from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory._chunking import split_text
from dcbrain.memory._fts import index_text, match_query
from dcbrain.memory.base import (
    ALL_KINDS,
    DEFAULT_CHUNK_TOKENS,
    Memory,
    MemoryItem,
    MemoryKind,
    RunEventRecord,
    RunRecord,
)
from dcbrain.messages import TextMessage, as_message

Migration = Callable[[sqlite3.Connection], None]


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    # Not executescript(): it commits first, and a migration must be one transaction.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _create_items(conn: sqlite3.Connection) -> None:
    _execute_script(
        conn,
        """
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            source TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('message', 'document', 'knowledge')),
            role TEXT,
            source TEXT,
            document_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            chunk_index INTEGER,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE INDEX items_by_conversation ON items (conversation_id, kind, id);
        """,
    )


def _create_keyword_index(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE VIRTUAL TABLE items_fts USING fts5("
        "body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    rows = conn.execute("SELECT id, content FROM items").fetchall()
    conn.executemany(
        "INSERT INTO items_fts (rowid, body) VALUES (?, ?)",
        [(item_id, index_text(content)) for item_id, content in rows],
    )


def _create_runs(conn: sqlite3.Connection) -> None:
    _execute_script(
        conn,
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            conversation_id TEXT,
            status TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX runs_by_conversation ON runs (conversation_id, created_at);
        CREATE TABLE run_events (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            event TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;
        CREATE TABLE kv (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at REAL NOT NULL
        ) WITHOUT ROWID;
        """,
    )


# Schema version N is reached by applying MIGRATIONS[N - 1] to version N - 1. Released
# migrations never change; a schema change is a new entry at the end.
MIGRATIONS: Final[tuple[Migration, ...]] = (
    _create_items,  # 1: conversation messages, documents, knowledge
    _create_keyword_index,  # 2: FTS5 keyword index over all items
    _create_runs,  # 3: runs, run events, key/values
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

_ITEM_COLUMNS: Final = (
    "items.id, items.conversation_id, items.kind, items.content, items.created_at, "
    "items.role, items.source, items.document_id, items.chunk_index, items.metadata"
)


def _dumps(value: Any) -> str:
    # Values that JSON cannot hold are kept as their str(): memory must not fail a run.
    return json.dumps(value, ensure_ascii=False, default=str)


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


class SQLiteMemory(Memory):
    """Memory in one SQLite file; ``":memory:"`` keeps it in this process only.

    ``busy_timeout`` (seconds) is how long a write waits for another connection's.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        self.busy_timeout = busy_timeout
        self._in_memory = self.path == ":memory:"
        self._lock = threading.RLock()  # serializes the single in-memory connection
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._closed = False
        if not self._in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._shared = self._open() if self._in_memory else None
        with self._use() as conn:
            self._migrate(conn)

    def __repr__(self) -> str:
        return f"SQLiteMemory({self.path!r})"

    # -- connections and transactions --------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        if not self._in_memory:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        with self._lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise TFMemoryError(f"{self!r} is closed")
        if self._shared is not None:
            with self._lock:
                yield self._shared
            return
        if os.getpid() != self._pid:  # a forked child must not share its parent's handles
            with self._lock:
                self._connections = []
                self._local = threading.local()
                self._pid = os.getpid()
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        yield conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; it takes the write lock up front so waiting is by timeout."""
        with self._use() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        with self._write() as tx:
            # Read again under the write lock: another process may have migrated meanwhile.
            version = tx.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise TFMemoryError(
                    f"{self.path} has memory schema version {version}; this dcbrain "
                    f"supports up to {SCHEMA_VERSION}. Upgrade dcbrain to open it."
                )
            for number in range(version + 1, SCHEMA_VERSION + 1):
                try:
                    MIGRATIONS[number - 1](tx)
                except sqlite3.Error as error:
                    raise TFMemoryError(
                        f"{self.path}: migrating the memory schema from version {version} "
                        f"to {number} failed, nothing was changed: {error}"
                    ) from error
                tx.execute(f"PRAGMA user_version = {number}")

    def schema_version(self) -> int:
        with self._use() as conn:
            version: int = conn.execute("PRAGMA user_version").fetchone()[0]
            return version

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections = []

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
                _dumps(metadata or {}),
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
        with self._write() as conn:
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
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO documents (conversation_id, source, metadata, created_at) "
                "VALUES (?, ?, ?, ?)",
                (conversation_id, source, _dumps(metadata or {}), now),
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
        with self._write() as conn:
            return self._insert_item(
                conn,
                conversation_id,
                "knowledge",
                text.strip(),
                created_at=time.time(),
                metadata=metadata,
            )

    def messages(self, conversation_id: str, limit: int | None = None) -> list[TextMessage]:
        with self._use() as conn:
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
        with self._use() as conn:
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
        with self._use() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_item(row, score=-row[10]) for row in rows]

    def delete_conversation(self, conversation_id: str) -> int:
        with self._write() as conn:
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

    # -- runs and key/values -----------------------------------------------------------

    def save_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        now = time.time()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, conversation_id, status, data, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                "conversation_id = excluded.conversation_id, status = excluded.status, "
                "data = excluded.data, updated_at = excluded.updated_at",
                (run_id, conversation_id, status, _dumps(data), now, now),
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._use() as conn:
            row = conn.execute(
                "SELECT run_id, conversation_id, status, data, created_at, updated_at "
                "FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return None if row is None else _run(row)

    def append_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO run_events (run_id, seq, event, created_at) VALUES (?, ?, ?, ?)",
                    (run_id, seq, _dumps(event), time.time()),
                )
        except sqlite3.IntegrityError as error:
            raise ValueError(f"run {run_id!r} already has an event with seq {seq}") from error

    def run_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        with self._use() as conn:
            rows = conn.execute(
                "SELECT run_id, seq, event, created_at FROM run_events "
                "WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after_seq),
            ).fetchall()
        return [RunEventRecord(row[0], row[1], json.loads(row[2]), row[3]) for row in rows]

    def list_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[RunRecord]:
        sql = "SELECT run_id, conversation_id, status, data, created_at, updated_at FROM runs"
        params: list[Any] = []
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        params.append(-1 if limit is None else limit)
        with self._use() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_run(row) for row in rows]

    def put_value(self, key: str, value: Any) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, json.dumps(value, ensure_ascii=False), time.time()),
            )

    def get_value(self, key: str, default: Any = None) -> Any:
        with self._use() as conn:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def delete_value(self, key: str) -> bool:
        with self._write() as conn:
            return conn.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0


def _run(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        conversation_id=row[1],
        status=row[2],
        data=json.loads(row[3]),
        created_at=row[4],
        updated_at=row[5],
    )
