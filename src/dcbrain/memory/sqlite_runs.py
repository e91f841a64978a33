"""``SQLiteRunStore``: runs, run events and key/values in one SQLite file."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Collection, Sequence
from typing import Any, Final

from dcbrain.memory._sqlite_db import SQLiteDatabase
from dcbrain.memory.run_store import RunEventRecord, RunStore, StoredRun
from dcbrain.values.jsonsafe import dumps

_RUN_COLUMNS: Final = "run_id, conversation_id, status, data, created_at, updated_at"


class SQLiteRunStore(RunStore):
    """A :class:`RunStore` in one SQLite file; ``":memory:"`` keeps it in this process only.

    ``busy_timeout`` (seconds) is how long a write waits for another connection's. The
    file format is the one :class:`~dcbrain.memory.SQLiteMemory` uses, so both may open
    the same file.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self._db = SQLiteDatabase(path, busy_timeout=busy_timeout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    @property
    def path(self) -> str:
        return self._db.path

    @property
    def busy_timeout(self) -> float:
        return self._db.busy_timeout

    def schema_version(self) -> int:
        """The schema version of the open file (``PRAGMA user_version``)."""
        return self._db.schema_version()

    def close(self) -> None:
        self._db.close()

    def save_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        now = time.time()
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, conversation_id, status, data, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
                "conversation_id = excluded.conversation_id, status = excluded.status, "
                "data = excluded.data, updated_at = excluded.updated_at",
                (run_id, conversation_id, status, dumps(data), now, now),
            )

    def update_run_if(self, run_id: str, status: str, changes: dict[str, Any], *,
                      only_from: Collection[str],
                      events: Sequence[dict[str, Any]] = ()) -> StoredRun | None:
        """Set the run's ``status`` and merge ``changes`` into its data if its status is
        one of ``only_from``; the record after, or ``None`` (unknown, or another status).
        ``events`` (each with an int ``seq``; one stored already is left) are stored with it.

        One write transaction: atomic against every process that has the file open."""
        with self._db.write() as conn:
            row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
                               (run_id,)).fetchone()
            if row is None or row[2] not in only_from:
                return None
            data = {**json.loads(row[3]), **changes}
            now = time.time()
            conn.execute("UPDATE runs SET status = ?, data = ?, updated_at = ? "
                         "WHERE run_id = ?", (status, dumps(data), now, run_id))
            conn.executemany(
                "INSERT OR IGNORE INTO run_events (run_id, seq, event, created_at) "
                "VALUES (?, ?, ?, ?)",
                [(run_id, int(event["seq"]), dumps(event), now) for event in events])
        return StoredRun(run_id=row[0], conversation_id=row[1], status=status, data=data,
                         created_at=row[4], updated_at=now)

    def get_run(self, run_id: str) -> StoredRun | None:
        with self._db.use() as conn:
            row = conn.execute(
                "SELECT run_id, conversation_id, status, data, created_at, updated_at "
                "FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return None if row is None else _run(row)

    def append_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        try:
            with self._db.write() as conn:
                conn.execute(
                    "INSERT INTO run_events (run_id, seq, event, created_at) VALUES (?, ?, ?, ?)",
                    (run_id, seq, dumps(event), time.time()),
                )
        except sqlite3.IntegrityError as error:
            raise ValueError(f"run {run_id!r} already has an event with seq {seq}") from error

    def run_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        with self._db.use() as conn:
            rows = conn.execute(
                "SELECT run_id, seq, event, created_at FROM run_events "
                "WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after_seq),
            ).fetchall()
        return [RunEventRecord(row[0], row[1], json.loads(row[2]), row[3]) for row in rows]

    def list_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[StoredRun]:
        sql = "SELECT run_id, conversation_id, status, data, created_at, updated_at FROM runs"
        params: list[Any] = []
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        params.append(-1 if limit is None else limit)
        with self._db.use() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_run(row) for row in rows]

    def page_runs(self, statuses: Collection[str] = (), conversation_id: str | None = None,
                  limit: int = 50, before: tuple[float, str] | None = None) -> list[StoredRun]:
        where: list[str] = []
        params: list[Any] = []
        if statuses:
            where.append(f"status IN ({', '.join('?' * len(statuses))})")
            params.extend(statuses)
        if conversation_id is not None:
            where.append("conversation_id = ?")
            params.append(conversation_id)
        if before is not None:
            where.append("(created_at < ? OR (created_at = ? AND run_id < ?))")
            params.extend([before[0], before[0], before[1]])
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, run_id DESC LIMIT ?"
        params.append(limit)
        with self._db.use() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_run(row) for row in rows]

    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]:
        if not statuses:
            return []
        with self._db.use() as conn:
            rows = conn.execute(
                f"SELECT run_id FROM runs WHERE status IN ({', '.join('?' * len(statuses))}) "
                "AND updated_at < ? ORDER BY updated_at LIMIT ?",
                [*statuses, ended_before, limit],
            ).fetchall()
        return [row[0] for row in rows]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        if not run_ids:
            return 0
        marks = ", ".join("?" * len(run_ids))
        with self._db.write() as conn:
            conn.execute(f"DELETE FROM run_events WHERE run_id IN ({marks})", list(run_ids))
            return conn.execute(f"DELETE FROM runs WHERE run_id IN ({marks})",
                                list(run_ids)).rowcount

    def put_value(self, key: str, value: Any) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, dumps(value), time.time()),
            )

    def get_value(self, key: str, default: Any = None) -> Any:
        with self._db.use() as conn:
            row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def delete_value(self, key: str) -> bool:
        with self._db.write() as conn:
            return conn.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0


def _run(row: tuple[Any, ...]) -> StoredRun:
    return StoredRun(
        run_id=row[0],
        conversation_id=row[1],
        status=row[2],
        data=json.loads(row[3]),
        created_at=row[4],
        updated_at=row[5],
    )
