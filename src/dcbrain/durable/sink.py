"""A run's events into the store, in batches, from a writer thread of its own.

Emitters (the run's loop, plan threads) only enqueue. A replayed run emits the same
``seq`` numbers for the part that already ran; those rows exist and are skipped, so the
stored events stay exactly-once and only the new tail is added.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from dcbrain._text import encodable
from dcbrain.durable.store import DurableStore
from dcbrain.events import Event

logger = logging.getLogger("dcbrain.durable")


class EventSink:
    """A brain subscriber storing one run's events under ``run_id``."""

    def __init__(self, store: DurableStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.next_seq = 0
        self.last_type: str | None = None
        self.inserted = 0
        #: The run that replaced this one: its final event then says ``superseded``.
        self.superseded_by: str | None = None
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._write, name=f"events:{run_id[:8]}",
                                        daemon=True)
        self._thread.start()

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
        with self._lock:
            self.next_seq = max(self.next_seq, int(record["seq"]) + 1)
            self.last_type = record.get("type")
        self._queue.put(record)

    def final(self, status: str, reason: str, **fields: Any) -> None:
        """Add the closing event when the brain wrote none (superseded, crashed)."""
        stored = self.store.events(self.run_id, self.next_seq - 1)
        seq = max([self.next_seq, *(int(e["seq"]) + 1 for e in stored)])
        self.add({"type": "final", "seq": seq, "ts": time.time(), "run_id": self.run_id,
                  "status": status, "reason": reason, "final_result": None, **fields})

    def close(self) -> None:
        """Wait until every queued event is stored."""
        self._queue.put(None)
        self._thread.join()

    def _write(self) -> None:
        done = False
        while not done:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    done = True
                    break
                batch.append(item)
            try:
                self.inserted += self.store.append_events(self.run_id, batch)
            except Exception:  # the run goes on; the log says which events are lost
                logger.exception("could not store %d event(s) of run %s", len(batch),
                                 self.run_id)
