"""A run's events into the store, through the process's :class:`StoreWriter`.

Emitters (the run's loop, plan threads) only queue. A replayed run emits the same ``seq``
numbers for the part that already ran; those rows exist and are skipped, so the stored
events stay exactly-once and only the new tail is added.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from dcbrain._text import encodable
from dcbrain.durable.store import DurableStore
from dcbrain.durable.writer import StoreWriter
from dcbrain.events import Event


class EventSink:
    """A brain subscriber storing one run's events under ``run_id``."""

    def __init__(self, store: DurableStore, run_id: str, writer: StoreWriter) -> None:
        self.store = store
        self.run_id = run_id
        self.writer = writer
        self.next_seq = 0
        self.last_type: str | None = None
        #: The run that replaced this one: its final event then says ``superseded``.
        self.superseded_by: str | None = None

    def __call__(self, event: Event) -> None:
        self.add(event.to_dict())

    def add(self, record: dict[str, Any]) -> None:
        """Queue one event (its ``seq`` decides its place)."""
        record = encodable(record)  # a plan may build any string; the stores need UTF-8
        record["run_id"] = self.run_id
        if record.get("type") == "final" and self.superseded_by is not None:
            record["superseded_by"] = self.superseded_by
            if record.get("status") == "aborted":
                record["reason"] = "superseded"
        self.next_seq = max(self.next_seq, int(record["seq"]) + 1)
        self.last_type = record.get("type")
        self.writer.add_events(self.run_id, [record])

    def final(self, status: str, reason: str, **fields: Any) -> None:
        """Add the closing event when the brain wrote none (superseded, crashed)."""
        self.close()
        stored = self.store.events(self.run_id, self.next_seq - 1)
        seq = max([self.next_seq, *(int(e["seq"]) + 1 for e in stored)])
        self.add({"type": "final", "seq": seq, "ts": time.time(), "run_id": self.run_id,
                  "status": status, "reason": reason, "final_result": None, **fields})

    def close(self) -> None:
        """Wait until every queued event is stored (a failed write is logged, not raised)."""
        with contextlib.suppress(Exception):  # the writer logged which batch was lost
            self.writer.flush()
