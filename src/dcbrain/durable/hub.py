"""Following runs' events on an API node, wherever the runs execute.

Events are only ever read from the store (``seq > last``), so a reader that connects late,
reconnects with ``Last-Event-ID`` or misses a wake-up still gets every event exactly once,
in order. Wake-ups come from one ``LISTEN dcbrain_events`` connection per node
(PostgreSQL), from the store of this process (an append here), and from a slow safety poll.
One fetch loop reads for every woken run in one query, however many readers there are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Final

from dcbrain.durable._urls import pg_dsn
from dcbrain.durable.store import EVENTS_CHANNEL, DurableStore
from dcbrain.exceptions import DatabaseUnavailable

logger = logging.getLogger("dcbrain.durable")

#: Seconds a reader waits without news before its run is read anyway (a lost wake-up).
SAFETY_POLL_S: Final = 2.0
#: Seconds before the listening connection is opened again after it broke.
RECONNECT_S: Final = 1.0


@dataclass(eq=False)
class _Reader:
    run_id: str
    after: int
    inbox: asyncio.Queue[list[dict[str, Any]]] = field(default_factory=asyncio.Queue)


class EventHub:
    """Delivers stored events to readers of runs; ``listen_url`` adds LISTEN wake-ups."""

    def __init__(self, store: DurableStore, *, listen_url: str | None = None,
                 safety_poll_s: float = SAFETY_POLL_S) -> None:
        self.store = store
        self.listen_url = listen_url
        self.safety_poll_s = safety_poll_s
        self._readers: dict[str, set[_Reader]] = defaultdict(set)
        self._dirty: set[str] = set()
        self._kick = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._listening = asyncio.Event()

    async def start(self) -> None:
        """Bind to the running loop; start the fetch loop and the LISTEN connection."""
        self._loop = asyncio.get_running_loop()
        self._tasks.append(asyncio.create_task(self._fetch_loop(), name="dcbrain-events-fetch"))
        if self.listen_url is not None:
            self._tasks.append(asyncio.create_task(self._listen(self.listen_url),
                                                   name="dcbrain-events-listen"))
            await self._listening.wait()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def wake(self, run_id: str) -> None:
        """New events of ``run_id`` are stored (any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed() or run_id not in self._readers:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._mark, run_id)

    def _mark(self, run_id: str) -> None:
        if run_id in self._readers:
            self._dirty.add(run_id)
            self._kick.set()

    async def _fetch_loop(self) -> None:
        while True:
            await self._kick.wait()
            self._kick.clear()
            dirty, self._dirty = self._dirty, set()
            wanted = {run_id: min(reader.after for reader in self._readers[run_id])
                      for run_id in dirty if self._readers.get(run_id)}
            if not wanted:
                continue
            try:
                found = await asyncio.to_thread(self.store.events_of_runs, wanted)
            except Exception as exc:
                if isinstance(exc, DatabaseUnavailable):  # its readers wait meanwhile
                    logger.warning("reading events failed; retrying: %s", exc)
                else:
                    logger.exception("reading events failed; retrying")
                self._dirty.update(wanted)
                await asyncio.sleep(RECONNECT_S)
                self._kick.set()
                continue
            for run_id, events in found.items():
                for reader in list(self._readers.get(run_id, ())):
                    fresh = [event for event in events if int(event["seq"]) > reader.after]
                    if fresh:
                        reader.after = int(fresh[-1]["seq"])
                        reader.inbox.put_nowait(fresh)

    async def _listen(self, url: str) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(pg_dsn(url),
                                                                 autocommit=True) as conn:
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    self._listening.set()
                    for run_id in list(self._readers):  # catch up on what was missed
                        self._mark(run_id)
                    async for note in conn.notifies():
                        self._mark(note.payload)
            except psycopg.Error:
                logger.warning("event listener lost its connection; reconnecting",
                               exc_info=True)
                self._listening.set()  # readers fall back to the safety poll meanwhile
                await asyncio.sleep(RECONNECT_S)

    async def follow(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """Events with ``seq > after``: stored ones first, then live ones; ends after ``final``."""
        reader = _Reader(run_id, after)
        self._readers[run_id].add(reader)
        self._mark(run_id)
        try:
            while True:
                try:
                    events = await asyncio.wait_for(reader.inbox.get(), self.safety_poll_s)
                except TimeoutError:
                    self._mark(run_id)
                    continue
                for event in events:
                    yield event
                    if event.get("type") == "final":
                        return
        finally:
            self._readers[run_id].discard(reader)
            if not self._readers[run_id]:
                del self._readers[run_id]
