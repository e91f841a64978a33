"""One SQLite file: connections per thread, write transactions and the schema's migrations.

Both SQLite stores (:class:`~dcbrain.memory.SQLiteRunStore` and
:class:`~dcbrain.memory.SQLiteMemory`) open the same file format, so either can open a
file the other wrote. Safe for many threads (one connection per thread) and for several
processes on one file (WAL, ``busy_timeout``, writes in ``BEGIN IMMEDIATE``
transactions). A commit that returned is on disk (``synchronous=FULL``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from dcbrain.exceptions import TFMemoryError
from dcbrain.memory._fts import index_text

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


def _add_token_counts(conn: sqlite3.Connection) -> None:
    # Items stored before this version keep NULL counts: recall counts those itself.
    conn.execute("ALTER TABLE items ADD COLUMN entry_tokens INTEGER")
    conn.execute("ALTER TABLE items ADD COLUMN hit_tokens INTEGER")
    # Keyword search checks each match's conversation here, without reading the row.
    conn.execute("CREATE INDEX items_conversation_by_id ON items (id, conversation_id)")


# Schema version N is reached by applying MIGRATIONS[N - 1] to version N - 1. Released
# migrations never change; a schema change is a new entry at the end.
MIGRATIONS: Final[tuple[Migration, ...]] = (
    _create_items,  # 1: conversation messages, documents, knowledge
    _create_keyword_index,  # 2: FTS5 keyword index over all items
    _create_runs,  # 3: runs, run events, key/values
    _add_token_counts,  # 4: token counts of each item's recall entries, search index
)
SCHEMA_VERSION: Final = len(MIGRATIONS)


class SQLiteDatabase:
    """Connections to one file (``":memory:"``: one shared connection, this process only).

    ``busy_timeout`` (seconds) is how long a write waits for another connection's.
    Opening brings the schema to :data:`SCHEMA_VERSION`.
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
        with self.use() as conn:
            self._migrate(conn)

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
    def use(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (autocommit: each statement is its own transaction)."""
        if self._closed:
            raise TFMemoryError(f"the store on {self.path!r} is closed")
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
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; it takes the write lock up front so waiting is by timeout."""
        with self.use() as conn:
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
        with self.write() as tx:
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
        with self.use() as conn:
            version: int = conn.execute("PRAGMA user_version").fetchone()[0]
            return version

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections = []
