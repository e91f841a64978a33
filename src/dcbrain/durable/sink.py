"""A run's events into the store, through the process's :class:`StoreWriter`.

Emitters (the run's loop, plan threads) only queue; events become dicts here, where
they are written. A replayed run emits the same ``seq`` numbers for the part that
already ran; those rows exist and are skipped, so the stored events stay exactly-once
and only the new tail is added.

The run's ``final`` event is held back: the executor stores it together with the run's
terminal status (:meth:`DurableStore.end_run`), so whoever reads the ``final`` reads the
status it announces.
"""

from __future__ import annotations

import logging
from typing import Any

from dcbrain.durable.store import DurableStore
from dcbrain.durable.writer import StoreWriter
from dcbrain.events import Event, EventType
from dcbrain.values.text import encodable

logger = logging.getLogger("dcbrain.durable")


class EventSink:
    """Stores one run's events under ``run_id`` (a :data:`dcbrain.runs.Sink`)."""

    def __init__(self, store: DurableStore, run_id: str, writer: StoreWriter) -> None:
        self.store = store
        self.run_id = run_id
        self.writer = writer
        #: The run's ``final`` event, stored with its terminal status.
        self.final: dict[str, Any] | None = None

    def __call__(self, event: Event) -> None:
        record = encodable(event.to_dict())  # a plan may build any string; stores need UTF-8
        record["run_id"] = self.run_id
        if event.type == EventType.FINAL:
            self.final = record
            return
        self.writer.add_events(self.run_id, [record])

    def next_free_seq(self, at_least: int) -> int:
        """The position after every stored event of the run (an earlier execution may
        have stored more than this one emitted)."""
        self.close()
        stored = self.store.events(self.run_id, at_least - 1)
        return max([at_least, *(int(e["seq"]) + 1 for e in stored)])

    def close(self) -> None:
        """Wait until every queued event is stored (a failed write is logged, not raised)."""
        try:
            self.writer.flush()
        except Exception:
            logger.warning("events of run %s may be lost", self.run_id, exc_info=True)
