"""What the cluster holds right now, for metrics: runs waiting, workers alive."""

from __future__ import annotations

import time

from dcbrain.durable.engine import DEAD_AFTER_S
from dcbrain.durable.store import PostgresDurableStore
from dcbrain.runs import QUEUED


def queued_runs(store: PostgresDurableStore) -> int:
    """Runs queued that no worker has started yet."""
    with store._connection() as conn:
        row = conn.execute("SELECT count(*) FROM dcbrain_runs WHERE status = %s",
                           (QUEUED,)).fetchone()
    return int(row[0]) if row else 0


def live_workers(store: PostgresDurableStore) -> int:
    """Workers whose last heartbeat is recent enough for them to count as alive."""
    with store._connection() as conn:
        row = conn.execute("SELECT count(*) FROM dcbrain_workers WHERE heartbeat_at >= %s",
                           (time.time() - DEAD_AFTER_S,)).fetchone()
    return int(row[0]) if row else 0
