"""One in-process run's events: kept while it is live, stored in order, then visible.

A run's events arrive as :class:`~dcbrain.events.Event` objects, numbered by the run's
own event log. The writer task stores them (as dicts: the one place they are turned
into JSON) and only then shows them to stream readers, so a ``seq`` a reader saw
survives a crash.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from dcbrain.events import Event
from dcbrain.memory import RunStore
from dcbrain.values.text import encodable

logger = logging.getLogger("dcbrain.server")


class RunEventLog:
    """The events of one live run: pending (numbered, not stored yet) and visible."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self.visible: list[dict[str, Any]] = []
        self.pending: list[Event] = []
        self.count = 0  # events recorded, stored or not
        self.sealed = False  # every event is stored and visible; no more will come
        self.closing = False
        self.changed = asyncio.Event()
        self.has_pending = asyncio.Event()

    def add(self, event: Event) -> None:
        """Queue ``event`` for the writer (on the server's loop)."""
        self.count = max(self.count, event.seq + 1)
        self.pending.append(event)
        self.has_pending.set()

    def notify(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    async def write(self) -> None:
        """The writer task: store the events in order, then make them visible."""
        while True:
            await self.has_pending.wait()
            self.has_pending.clear()
            batch, self.pending = self.pending, []
            if batch:
                records = await asyncio.to_thread(self._store, batch)
                self.visible.extend(records)
                self.notify()
            if self.closing and not self.pending:
                self.sealed = True
                self.notify()
                return

    def close(self) -> None:
        self.closing = True
        self.has_pending.set()

    def _store(self, events: list[Event]) -> list[dict[str, Any]]:
        records = []
        for event in events:
            record = encodable(event.to_dict())  # a plan may build any string; UTF-8 here
            records.append(record)
            try:
                self.store.append_run_event(self.run_id, event.seq, record)
            except Exception:  # a reader still gets the event live; the log says what is lost
                logger.exception("could not store event %s of run %s", event.seq, self.run_id)
        return records

    async def follow(self, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """Visible events with ``seq > after``, then new ones until the run's end."""
        index = after + 1
        while True:
            changed = self.changed
            while index < len(self.visible):
                yield self.visible[index]
                index += 1
            if self.sealed:
                return
            await changed.wait()
