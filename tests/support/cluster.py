"""The command lines of a scale-out cluster: workers and an API node on one PostgreSQL.

``tests/durable/test_scaleout.py`` starts processes with these; ``deploy/compose.yaml`` runs
the same commands in containers, and ``tests/deploy/test_compose.py`` holds it to them.
"""

from __future__ import annotations

#: Runs each worker executes at once.
WORKER_CONCURRENCY = 4


def worker_command(*, config: str, db: str, executor_id: str) -> list[str]:
    """``dcbrain worker``'s arguments for one worker of the cluster."""
    return ["worker", "--config", config, "--db", db,
            "--concurrency", str(WORKER_CONCURRENCY), "--executor-id", executor_id]


def api_command(*, config: str, db: str, host: str, port: int) -> list[str]:
    """``dcbrain serve``'s arguments for the cluster's API node (it executes no runs)."""
    return ["serve", "--config", config, "--db", db, "--role", "api",
            "--host", host, "--port", str(port)]
