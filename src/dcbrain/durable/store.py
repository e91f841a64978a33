"""Where durable runs keep their records: runs, their events and their call journals.

Two backends with one interface. :class:`PostgresDurableStore` keeps everything in
``dcbrain_*`` tables of the PostgreSQL database DBOS uses, so any number of workers and
API nodes share it; an append NOTIFYs ``dcbrain_events`` in the same transaction.
:class:`SQLiteDurableStore` keeps runs and events in the run store the server already uses
(its ``runs`` / ``run_events`` tables) and journals in a file of their own: one process.

Every write a replay may repeat is idempotent: events are keyed by ``(run_id, seq)`` and
journal entries by ``(run_id, key)``; a row that exists is left as it is.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dcbrain.durable._pg import Connections
from dcbrain.durable._run_admin import ADMIN_INDEXES, PostgresRunAdmin
from dcbrain.memory import SQLiteRunStore, StoredRun
from dcbrain.values.jsonsafe import dumps

if TYPE_CHECKING:
    import psycopg

    from dcbrain.memory import RunStore

#: Channel an append notifies with the run id as payload (PostgreSQL).
EVENTS_CHANNEL: Final = "dcbrain_events"


#: A journal row to store: (run id, key, entry).
JournalRow = tuple[str, str, dict[str, Any]]


def _dumps(value: Any) -> str:
    return dumps(value, compact=True)


class DurableStore(ABC):
    """Runs, events and journals of durable runs (thread-safe)."""

    #: Called with a run id after its events were stored (in-process readers wake up).
    on_append: Callable[[str], None] | None = None

    # -- runs --------------------------------------------------------------------------

    @abstractmethod
    def save_run(self, run_id: str, conversation_id: str | None, status: str,
                 data: dict[str, Any]) -> None:
        """Create or replace a run's record."""

    @abstractmethod
    def get_run(self, run_id: str) -> StoredRun | None: ...

    @abstractmethod
    def list_runs(self, conversation_id: str | None = None,
                  limit: int | None = None) -> list[StoredRun]:
        """Runs, newest first."""

    @abstractmethod
    def update_run(self, run_id: str, status: str, changes: dict[str, Any], *,
                   only_from: Collection[str]) -> StoredRun | None:
        """Set status and merge ``changes`` into data if the status is one of ``only_from``.

        Returns the new record, or ``None`` when the run is unknown or its status was not
        one of ``only_from`` (a compare-and-set: two nodes never both win).
        """

    def end_run(self, run_id: str, status: str, changes: dict[str, Any],
                events: Sequence[dict[str, Any]], *,
                only_from: Collection[str]) -> StoredRun | None:
        """:meth:`update_run` to a terminal ``status`` and, only if it won, store ``events``
        (the run's ``final``): a reader that sees the ``final`` event reads the status,
        result and event count it announces. Backends that can do both in one transaction
        do; the others set the status first."""
        ended = self.update_run(run_id, status, changes, only_from=only_from)
        if ended is not None and events:
            self.append_events(run_id, events)
        return ended

    @abstractmethod
    def page_runs(self, statuses: Collection[str] = (), conversation_id: str | None = None,
                  limit: int = 50, before: tuple[float, str] | None = None) -> list[StoredRun]:
        """A page of runs newest first (see :meth:`dcbrain.memory.RunStore.page_runs`)."""

    @abstractmethod
    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]:
        """Ids of runs of ``statuses`` last changed before ``ended_before``, oldest first."""

    @abstractmethod
    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Forget the runs, their events and their journal rows; how many runs there were."""

    # -- events ------------------------------------------------------------------------

    @abstractmethod
    def append_events(self, run_id: str, events: Sequence[dict[str, Any]]) -> int:
        """Store events (each has an int ``seq``) not stored yet; returns how many were new."""

    @abstractmethod
    def events(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        """The run's events with ``seq > after``, in order."""

    def events_of_runs(self, after: dict[str, int]) -> dict[str, list[dict[str, Any]]]:
        """For each run id of ``after``, its events past the given ``seq``, in order."""
        return {run_id: self.events(run_id, seq) for run_id, seq in after.items()}

    # -- journal -----------------------------------------------------------------------

    @abstractmethod
    def journal(self, run_id: str) -> list[dict[str, Any]]:
        """The run's journal entries in the order they were recorded."""

    @abstractmethod
    def record_journal(self, run_id: str, key: str, entry: dict[str, Any]) -> bool:
        """Store one entry under ``key`` unless one is there; ``True`` when it was new."""

    def write_batch(self, events: dict[str, list[dict[str, Any]]],
                    journal: Sequence[JournalRow]) -> None:
        """Store events of many runs and journal rows, each only if not stored yet.

        Backends that can do it in one transaction do (all of the batch or none of it).
        """
        for run_id, key, entry in journal:
            self.record_journal(run_id, key, entry)
        for run_id, records in events.items():
            self.append_events(run_id, records)

    # -- key/values (a conversation's failed attempts, read by the next run) -----------

    @abstractmethod
    def put_value(self, key: str, value: Any) -> None: ...

    @abstractmethod
    def get_value(self, key: str, default: Any = None) -> Any: ...

    @abstractmethod
    def delete_value(self, key: str) -> bool: ...

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""


# -- PostgreSQL ---------------------------------------------------------------------------

_PG_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS dcbrain_runs (
    run_id text PRIMARY KEY,
    conversation_id text,
    status text NOT NULL,
    data jsonb NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS dcbrain_runs_by_conversation
    ON dcbrain_runs (conversation_id, created_at);
CREATE TABLE IF NOT EXISTS dcbrain_run_events (
    run_id text NOT NULL,
    seq integer NOT NULL,
    event jsonb NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS dcbrain_journal (
    run_id text NOT NULL,
    key text NOT NULL,
    position bigserial,
    entry jsonb NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS dcbrain_values (
    key text PRIMARY KEY,
    value jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS dcbrain_workers (
    executor_id text PRIMARY KEY,
    started_at double precision NOT NULL,
    heartbeat_at double precision NOT NULL
);
ALTER TABLE dcbrain_workers ADD COLUMN IF NOT EXISTS app_version text;
ALTER TABLE dcbrain_workers ADD COLUMN IF NOT EXISTS concurrency integer;
"""
#: Serializes schema creation between processes starting at once.
_SCHEMA_LOCK_ID: Final = 0x6463_6272  # "dcbr"
_RUN_COLUMNS: Final = "run_id, conversation_id, status, data, created_at, updated_at"


class PostgresDurableStore(PostgresRunAdmin, DurableStore):
    """The ``dcbrain_*`` tables of one PostgreSQL database, through a small connection pool."""

    def __init__(self, url: str, *, max_connections: int = 8,
                 outage_wait_s: float = 0.0) -> None:
        """``outage_wait_s``: how long an operation waits for a database that is down
        before it raises :class:`~dcbrain.exceptions.DatabaseUnavailable`."""
        self.connections = Connections(url, max_connections=max_connections,
                                       outage_wait_s=outage_wait_s)
        self.dsn = self.connections.dsn
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_ID,))
            conn.execute(_PG_SCHEMA)
            conn.execute(ADMIN_INDEXES)

    def __repr__(self) -> str:
        return f"PostgresDurableStore({self.connections.where!r})"

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self.connections.use()

    def close(self) -> None:
        """Close the idle connections; one in use is closed when its user is done with it."""
        self.connections.close()

    def save_run(self, run_id: str, conversation_id: str | None, status: str,
                 data: dict[str, Any]) -> None:
        now = time.time()
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO dcbrain_runs VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) "
                "DO UPDATE SET conversation_id = excluded.conversation_id, "
                "status = excluded.status, data = excluded.data, updated_at = excluded.updated_at",
                (run_id, conversation_id, status, _dumps(data), now, now),
            )

    def get_run(self, run_id: str) -> StoredRun | None:
        with self._connection() as conn:
            row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM dcbrain_runs WHERE run_id = %s",
                               (run_id,)).fetchone()
        return None if row is None else StoredRun(*row)

    def list_runs(self, conversation_id: str | None = None,
                  limit: int | None = None) -> list[StoredRun]:
        sql = f"SELECT {_RUN_COLUMNS} FROM dcbrain_runs"
        params: list[Any] = []
        if conversation_id is not None:
            sql += " WHERE conversation_id = %s"
            params.append(conversation_id)
        sql += " ORDER BY created_at DESC LIMIT %s"
        params.append(limit)
        with self._connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [StoredRun(*row) for row in rows]

    def update_run(self, run_id: str, status: str, changes: dict[str, Any], *,
                   only_from: Collection[str]) -> StoredRun | None:
        with self._connection() as conn:
            row = _moved(conn, run_id, status, changes, only_from)
        return None if row is None else StoredRun(*row)

    def append_events(self, run_id: str, events: Sequence[dict[str, Any]]) -> int:
        return self._write({run_id: list(events)}, ())

    def end_run(self, run_id: str, status: str, changes: dict[str, Any],
                events: Sequence[dict[str, Any]], *,
                only_from: Collection[str]) -> StoredRun | None:
        with self._connection() as conn, conn.transaction():
            row = _moved(conn, run_id, status, changes, only_from)
            if row is None:
                return None
            self._insert_events(conn, {run_id: list(events)})
        if events and self.on_append is not None:
            self.on_append(run_id)
        return StoredRun(*row)

    def write_batch(self, events: dict[str, list[dict[str, Any]]],
                    journal: Sequence[JournalRow]) -> None:
        self._write(events, journal)

    def _write(self, events: Mapping[str, Sequence[dict[str, Any]]],
               journal: Sequence[JournalRow]) -> int:
        """Journal rows, then events, in one transaction that NOTIFYs each run with new
        events; returns how many events were new.

        Each list goes as one JSON document: psycopg's text arrays escape every string
        with a regular expression, which costs more than the whole insert.
        """
        if not any(events.values()) and not journal:
            return 0
        with self._connection() as conn, conn.transaction():
            if journal:
                conn.execute(
                    "INSERT INTO dcbrain_journal (run_id, key, entry) "
                    "SELECT t.r, t.k, t.e FROM jsonb_array_elements(%s::jsonb) "
                    "WITH ORDINALITY AS a(row, n), "
                    "jsonb_to_record(a.row) AS t(r text, k text, e jsonb) ORDER BY a.n "
                    "ON CONFLICT (run_id, key) DO NOTHING",
                    (_dumps([{"r": r, "k": k, "e": e} for r, k, e in journal]),),
                )
            inserted = self._insert_events(conn, events)
        if self.on_append is not None:
            for run_id, records in events.items():
                if records:
                    self.on_append(run_id)
        return inserted

    @staticmethod
    def _insert_events(conn: psycopg.Connection[Any],
                       events: Mapping[str, Sequence[dict[str, Any]]]) -> int:
        """Insert the events not stored yet and NOTIFY their runs (in the caller's
        transaction); returns how many were new."""
        rows = [{"r": run_id, "s": int(e["seq"]), "e": e}
                for run_id, records in events.items() for e in records]
        if not rows:
            return 0
        inserted = conn.execute(
            "INSERT INTO dcbrain_run_events SELECT t.r, t.s, t.e, %s "
            "FROM jsonb_to_recordset(%s::jsonb) AS t(r text, s int, e jsonb) "
            "ON CONFLICT (run_id, seq) DO NOTHING",
            (time.time(), _dumps(rows)),
        ).rowcount
        notified = [run_id for run_id, records in events.items() if records]
        conn.execute("SELECT pg_notify(%s, r) FROM jsonb_array_elements_text(%s::jsonb) "
                     "AS t(r)", (EVENTS_CHANNEL, _dumps(notified)))
        return int(inserted)

    def events(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT event FROM dcbrain_run_events WHERE run_id = %s AND seq > %s "
                "ORDER BY seq", (run_id, after),
            ).fetchall()
        return [row[0] for row in rows]

    def events_of_runs(self, after: dict[str, int]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in after}
        if not after:
            return found
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT e.run_id, e.event FROM dcbrain_run_events e "
                "JOIN unnest(%s::text[], %s::int[]) AS w(run_id, after) "
                "ON e.run_id = w.run_id AND e.seq > w.after ORDER BY e.run_id, e.seq",
                (list(after), list(after.values())),
            ).fetchall()
        for run_id, event in rows:
            found[run_id].append(event)
        return found

    def journal(self, run_id: str) -> list[dict[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT entry FROM dcbrain_journal WHERE run_id = %s ORDER BY position",
                (run_id,),
            ).fetchall()
        return [row[0] for row in rows]

    def record_journal(self, run_id: str, key: str, entry: dict[str, Any]) -> bool:
        with self._connection() as conn:
            cursor = conn.execute(
                "INSERT INTO dcbrain_journal (run_id, key, entry) VALUES (%s, %s, %s) "
                "ON CONFLICT (run_id, key) DO NOTHING", (run_id, key, _dumps(entry)),
            )
            return cursor.rowcount > 0

    def put_value(self, key: str, value: Any) -> None:
        with self._connection() as conn:
            conn.execute("INSERT INTO dcbrain_values (key, value) VALUES (%s, %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                         (key, _dumps(value)))

    def get_value(self, key: str, default: Any = None) -> Any:
        with self._connection() as conn:
            row = conn.execute("SELECT value FROM dcbrain_values WHERE key = %s",
                               (key,)).fetchone()
        return default if row is None else row[0]

    def delete_value(self, key: str) -> bool:
        with self._connection() as conn:
            cursor = conn.execute("DELETE FROM dcbrain_values WHERE key = %s", (key,))
            return cursor.rowcount > 0


# -- SQLite ------------------------------------------------------------------------------

_SQLITE_RECORD: Final = "INSERT OR IGNORE INTO dcbrain_journal VALUES (?, ?, ?)"
_SQLITE_JOURNAL: Final = """
CREATE TABLE IF NOT EXISTS dcbrain_journal (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
)
"""


class SQLiteDurableStore(DurableStore):
    """Runs and events in a :class:`~dcbrain.memory.RunStore`, journals in an SQLite file.

    For the embedded ``dcbrain serve`` and the processes that queue runs for it
    (``dcbrain mcp --shared``): the compare-and-set of :meth:`update_run` is one write
    transaction of the SQLite file when the run store is one (else a lock of this process).
    """

    def __init__(self, runs: RunStore, journal_path: str | Path) -> None:
        self.runs = runs
        self.journal_path = str(journal_path)
        self._lock = threading.RLock()
        self._local = threading.local()
        with self._journal_db() as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(_SQLITE_JOURNAL)

    def __repr__(self) -> str:
        return f"SQLiteDurableStore({self.runs!r}, {self.journal_path!r})"

    def put_value(self, key: str, value: Any) -> None:
        self.runs.put_value(key, value)

    def get_value(self, key: str, default: Any = None) -> Any:
        return self.runs.get_value(key, default)

    def delete_value(self, key: str) -> bool:
        return self.runs.delete_value(key)

    @contextmanager
    def _journal_db(self) -> Iterator[sqlite3.Connection]:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.journal_path, timeout=30, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
        yield conn

    def save_run(self, run_id: str, conversation_id: str | None, status: str,
                 data: dict[str, Any]) -> None:
        with self._lock:
            self.runs.save_run(run_id, conversation_id, status, data)

    def get_run(self, run_id: str) -> StoredRun | None:
        return self.runs.get_run(run_id)

    def list_runs(self, conversation_id: str | None = None,
                  limit: int | None = None) -> list[StoredRun]:
        return self.runs.list_runs(conversation_id, limit)

    def page_runs(self, statuses: Collection[str] = (), conversation_id: str | None = None,
                  limit: int = 50, before: tuple[float, str] | None = None) -> list[StoredRun]:
        return self.runs.page_runs(statuses, conversation_id, limit, before)

    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]:
        return self.runs.finished_runs(statuses, ended_before, limit)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        if run_ids:  # the journal first: a run left without one is pruned next time
            with self._journal_db() as conn:
                conn.execute(f"DELETE FROM dcbrain_journal WHERE run_id IN "
                             f"({', '.join('?' * len(run_ids))})", list(run_ids))
        with self._lock:
            return self.runs.delete_runs(run_ids)

    def update_run(self, run_id: str, status: str, changes: dict[str, Any], *,
                   only_from: Collection[str]) -> StoredRun | None:
        with self._lock:
            if isinstance(self.runs, SQLiteRunStore):  # atomic for other processes too
                return self.runs.update_run_if(run_id, status, changes, only_from=only_from)
            record = self.runs.get_run(run_id)
            if record is None or record.status not in only_from:
                return None
            data = {**record.data, **changes}
            self.runs.save_run(run_id, record.conversation_id, status, data)
            return self.runs.get_run(run_id)

    def end_run(self, run_id: str, status: str, changes: dict[str, Any],
                events: Sequence[dict[str, Any]], *,
                only_from: Collection[str]) -> StoredRun | None:
        with self._lock:  # no other write of this process comes between the two
            if not isinstance(self.runs, SQLiteRunStore):
                return super().end_run(run_id, status, changes, events, only_from=only_from)
            # one transaction: whoever reads the terminal status reads the final event too
            ended = self.runs.update_run_if(run_id, status, changes, only_from=only_from,
                                            events=events)
        if ended is not None and events and self.on_append is not None:
            self.on_append(run_id)
        return ended

    def append_events(self, run_id: str, events: Sequence[dict[str, Any]]) -> int:
        inserted = 0
        for event in events:
            try:
                self.runs.append_run_event(run_id, int(event["seq"]), event)
            except ValueError:  # stored by an earlier execution of the run
                continue
            inserted += 1
        if events and self.on_append is not None:
            self.on_append(run_id)
        return inserted

    def events(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        return [record.event for record in self.runs.run_events(run_id, after)]

    def journal(self, run_id: str) -> list[dict[str, Any]]:
        with self._journal_db() as conn:
            rows = conn.execute("SELECT entry FROM dcbrain_journal WHERE run_id = ? "
                                "ORDER BY rowid", (run_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def write_batch(self, events: dict[str, list[dict[str, Any]]],
                    journal: Sequence[JournalRow]) -> None:
        if journal:
            with self._journal_db() as conn:
                conn.execute("BEGIN")
                try:
                    conn.executemany(_SQLITE_RECORD,
                                     [(r, k, _dumps(e)) for r, k, e in journal])
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
        for run_id, records in events.items():
            self.append_events(run_id, records)

    def record_journal(self, run_id: str, key: str, entry: dict[str, Any]) -> bool:
        with self._journal_db() as conn:
            cursor = conn.execute(_SQLITE_RECORD,
                                  (run_id, key, _dumps(entry)))
            return cursor.rowcount > 0


def _moved(conn: psycopg.Connection[Any], run_id: str, status: str, changes: dict[str, Any],
           only_from: Collection[str]) -> tuple[Any, ...] | None:
    """The run's row after it moved to ``status`` with ``changes`` (``None``: it was not in
    one of ``only_from``)."""
    return conn.execute(
        f"UPDATE dcbrain_runs SET status = %s, data = data || %s::jsonb, "
        f"updated_at = %s WHERE run_id = %s AND status = ANY(%s) "
        f"RETURNING {_RUN_COLUMNS}",
        (status, _dumps(changes), time.time(), run_id, list(only_from)),
    ).fetchone()
