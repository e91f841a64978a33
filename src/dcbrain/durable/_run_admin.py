"""The PostgreSQL queries operators need beside a run's own life: list pages and pruning.

A mixin of :class:`~dcbrain.durable.store.PostgresDurableStore`, kept apart so that the
store's module stays about the runs' life (save, update, events, journal).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from dcbrain.memory import StoredRun

if TYPE_CHECKING:
    import psycopg

RUN_COLUMNS: Final = "run_id, conversation_id, status, data, created_at, updated_at"
#: Created with the store's tables: listings newest first, pruning by last change.
ADMIN_INDEXES: Final = """
CREATE INDEX IF NOT EXISTS dcbrain_runs_by_creation ON dcbrain_runs (created_at, run_id);
CREATE INDEX IF NOT EXISTS dcbrain_runs_by_change ON dcbrain_runs (status, updated_at);
"""


class PostgresRunAdmin:
    """Paging and pruning over the ``dcbrain_*`` tables (a mixin: needs ``_connection``)."""

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def page_runs(self, statuses: Collection[str] = (), conversation_id: str | None = None,
                  limit: int = 50, before: tuple[float, str] | None = None) -> list[StoredRun]:
        """Up to ``limit`` runs newest first by ``(created_at, run_id)``, strictly before
        ``before``, of one of ``statuses`` (any when empty) and of ``conversation_id``."""
        where: list[str] = []
        params: list[Any] = []
        if statuses:
            where.append("status = ANY(%s)")
            params.append(list(statuses))
        if conversation_id is not None:
            where.append("conversation_id = %s")
            params.append(conversation_id)
        if before is not None:
            where.append("(created_at, run_id) < (%s, %s)")
            params.extend(before)
        sql = f"SELECT {RUN_COLUMNS} FROM dcbrain_runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, run_id DESC LIMIT %s"
        params.append(limit)
        with self._connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [StoredRun(*row) for row in rows]

    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]:
        """Ids of up to ``limit`` runs of one of ``statuses`` last changed before
        ``ended_before``, oldest first."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT run_id FROM dcbrain_runs WHERE status = ANY(%s) AND updated_at < %s "
                "ORDER BY updated_at LIMIT %s", (list(statuses), ended_before, limit),
            ).fetchall()
        return [row[0] for row in rows]

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Forget the runs, their events and their journal rows, in one transaction."""
        if not run_ids:
            return 0
        ids = list(run_ids)
        with self._connection() as conn, conn.transaction():
            conn.execute("DELETE FROM dcbrain_journal WHERE run_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM dcbrain_run_events WHERE run_id = ANY(%s)", (ids,))
            deleted: int = conn.execute("DELETE FROM dcbrain_runs WHERE run_id = ANY(%s)",
                                        (ids,)).rowcount
        return deleted
