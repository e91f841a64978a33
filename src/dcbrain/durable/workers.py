"""Who can execute which runs: workers' heartbeats, the takeover rule, stranded runs.

A run resumes only under the application version it started with: DBOS hands a dead
executor's workflows back to the queue only for the version of the process that asks, and
dequeues a workflow only on a worker of its version. Hence the takeover rule: a live worker
claims (deletes) a dead worker's heartbeat row only when the row names its own version.
Claiming another version's row would hand back none of its runs and destroy the one record
that they wait for a worker of that version.

A run whose workflow is pending under a version no live worker runs is **stranded**: its
record says so (status ``stranded``, ``stranded_version``), a warning names it, and
:func:`stranded_runs` counts it, until a worker of that version starts (it claims the row
and resumes the run) or an operator resumes it under another version
(:meth:`DurableEngine.resume <dcbrain.durable.engine.DurableEngine.resume>`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from dcbrain.durable._pg import Connections
from dcbrain.durable.store import DurableStore, PostgresDurableStore
from dcbrain.runs import QUEUED, RUNNING, STRANDED


@dataclass(frozen=True)
class PendingRun:
    """A run whose workflow DBOS holds as started (``PENDING``), and under which version."""

    run_id: str
    app_version: str | None


def stranded(pending: Iterable[PendingRun],
             live_versions: Collection[str | None]) -> dict[str, list[str]]:
    """Run ids by application version, of the ``pending`` runs no live worker can resume.

    A live worker of unknown version (``None``: one that predates versioned heartbeats)
    may run any version, so while one is live no run is called stranded.
    """
    if None in live_versions:
        return {}
    found: dict[str, list[str]] = {}
    for run in pending:
        if run.app_version is not None and run.app_version not in live_versions:
            found.setdefault(run.app_version, []).append(run.run_id)
    return found


def mark_stranded(store: DurableStore, by_version: dict[str, list[str]]) -> dict[str, list[str]]:
    """Record the runs of ``by_version`` as stranded; returns those that were not already."""
    marked: dict[str, list[str]] = {}
    for app_version, run_ids in by_version.items():
        for run_id in run_ids:
            changed = store.update_run(
                run_id, STRANDED, {"stranded_version": app_version, "stranded_at": time.time()},
                only_from=(QUEUED, RUNNING))
            if changed is not None:
                marked.setdefault(app_version, []).append(run_id)
    return marked


def stranded_runs(store: DurableStore) -> dict[str, list[str]]:
    """The stranded runs' ids by the application version they wait for (for metrics)."""
    if isinstance(store, PostgresDurableStore):
        with store.connections.use() as conn:
            rows = conn.execute("SELECT run_id, data->>'stranded_version' FROM dcbrain_runs "
                                "WHERE status = %s ORDER BY created_at", (STRANDED,)).fetchall()
    else:
        rows = [(record.run_id, record.data.get("stranded_version"))
                for record in reversed(store.list_runs()) if record.status == STRANDED]
    found: dict[str, list[str]] = {}
    for run_id, app_version in rows:
        found.setdefault(str(app_version or ""), []).append(run_id)
    return found


def fair_share(load: int, concurrency: int, capacity: int) -> int:
    """How many runs a worker of ``concurrency`` may execute at once while ``load`` runs
    are queued or executing on live workers whose concurrencies add up to ``capacity``:
    its part of the load in proportion to its concurrency, rounded up (so the parts add up
    to the load: no run waits while some worker has room), at least 1 and at most
    ``concurrency``."""
    if capacity <= 0:  # no live worker counted yet (this one's first heartbeat is coming)
        return concurrency
    return max(1, min(concurrency, math.ceil(load * concurrency / capacity)))


class WorkerRegistry:
    """The ``dcbrain_workers`` heartbeat rows of one PostgreSQL database.

    Through connections of its own that never wait out an outage: a heartbeat that
    cannot be written fails at once, so a worker knows when the database was away (and
    gives its peers the time to beat again before it calls any of them dead).
    """

    def __init__(self, store: PostgresDurableStore) -> None:
        self.connections = Connections(store.dsn, max_connections=2)

    def close(self) -> None:
        self.connections.close()

    def heartbeat(self, executor_id: str, app_version: str,
                  concurrency: int | None = None, *, silent_for_s: float = math.inf) -> int:
        """Write the worker's heartbeat; returns how many workers of ``app_version`` (or
        of none) have been silent for ``silent_for_s`` (what :meth:`claim_dead` would
        claim), in the same round trip."""
        now = time.time()
        with self.connections.use() as conn:
            row = conn.execute(
                "WITH beat AS (INSERT INTO dcbrain_workers (executor_id, started_at, "
                "heartbeat_at, app_version, concurrency) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (executor_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, "
                "app_version = excluded.app_version, concurrency = excluded.concurrency) "
                "SELECT count(*) FROM dcbrain_workers WHERE heartbeat_at < %s "
                "AND (app_version = %s OR app_version IS NULL)",
                (executor_id, now, now, app_version, concurrency,
                 now - min(silent_for_s, 1e12), app_version)).fetchone()
        return 0 if row is None else int(row[0])

    def load(self, queue_name: str, app_version: str,
             live_within_s: float) -> tuple[int, int, int]:
        """``(queued, executing, capacity)``: the runs of ``app_version`` queued and
        executing on ``queue_name`` (DBOS's workflows), and the summed concurrency of the
        workers of that version heard from within ``live_within_s``."""
        with self.connections.use() as conn:
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE status = 'ENQUEUED'), "
                "count(*) FILTER (WHERE status = 'PENDING'), "
                "(SELECT coalesce(sum(concurrency), 0) FROM dcbrain_workers "
                "WHERE heartbeat_at >= %s AND app_version = %s) "
                "FROM dbos.workflow_status WHERE queue_name = %s "
                "AND status IN ('ENQUEUED', 'PENDING') AND application_version = %s",
                (time.time() - live_within_s, app_version, queue_name, app_version),
            ).fetchone()
        return (0, 0, 0) if row is None else (int(row[0]), int(row[1]), int(row[2]))

    def forget(self, executor_id: str) -> None:
        with self.connections.use() as conn:
            conn.execute("DELETE FROM dcbrain_workers WHERE executor_id = %s", (executor_id,))

    def claim_dead(self, silent_for_s: float, app_version: str) -> list[str]:
        """Remove and return the workers of ``app_version`` silent for ``silent_for_s``.

        Rows without a version (written before heartbeats carried one) are claimed by
        anyone, as they always were. The delete is the claim: when several live workers
        look at once, each dead one is returned to one of them only.
        """
        with self.connections.use() as conn:
            rows = conn.execute(
                "DELETE FROM dcbrain_workers WHERE heartbeat_at < %s "
                "AND (app_version = %s OR app_version IS NULL) RETURNING executor_id",
                (time.time() - silent_for_s, app_version)).fetchall()
        return [row[0] for row in rows]

    def versions(self, silent_for_s: float) -> dict[str, str | None]:
        """The application version of each worker heard from within ``silent_for_s``."""
        return self._versions(">=", silent_for_s)

    def dead(self, silent_for_s: float) -> dict[str, str | None]:
        """The application version of each worker silent for ``silent_for_s`` (kept: no
        live worker of its version claimed it)."""
        return self._versions("<", silent_for_s)

    def _versions(self, compare: str, silent_for_s: float) -> dict[str, str | None]:
        with self.connections.use() as conn:
            rows = conn.execute(
                f"SELECT executor_id, app_version FROM dcbrain_workers "
                f"WHERE heartbeat_at {compare} %s", (time.time() - silent_for_s,)).fetchall()
        return {row[0]: row[1] for row in rows}
