"""Following a run's events on an API node, wherever the run executes.

Events are only ever read from the store (``seq > last``), so a reader that connects late,
reconnects with ``Last-Event-ID`` or misses a wake-up still gets every event exactly once,
in order. Wake-ups come from one ``LISTEN dcbrain_events`` connection per node
(PostgreSQL), from the store of this process (an append here), and from a slow safety poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any, Final

from dcbrain.durable._urls import pg_dsn
from dcbrain.durable.store import EVENTS_CHANNEL, RunStore

logger = logging.getLogger("dcbrain.durable")

#: Seconds between reads when no wake-up came (a lost notification costs at most this).
SAFETY_POLL_S: Final = 2.0
#: Seconds before the listening connection is opened again after it broke.
RECONNECT_S: Final = 1.0


class EventHub:
    """Wakes readers of a run when its events were appended; ``listen_url`` adds LISTEN."""

    def __init__(self, store: RunStore, *, listen_url: str | None = None,
                 safety_poll_s: float = SAFETY_POLL_S) -> None:
        self.store = store
        self.listen_url = listen_url
        self.safety_poll_s = safety_poll_s
        self._wakers: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def start(self) -> None:
        """Bind to the running loop; open the LISTEN connection when there is one."""
        self._loop = asyncio.get_running_loop()
        if self.listen_url is not None:
            self._listener = asyncio.create_task(self._listen(self.listen_url),
                                                 name="dcbrain-events-listen")
            await self._listening.wait()

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener

    def wake(self, run_id: str) -> None:
        """New events of ``run_id`` are stored (any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed() or run_id not in self._wakers:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._set, run_id)

    def _set(self, run_id: str) -> None:
        for waker in self._wakers.get(run_id, ()):
            waker.set()

    async def _listen(self, url: str) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(pg_dsn(url),
                                                                 autocommit=True) as conn:
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    self._listening.set()
                    for run_id in list(self._wakers):  # catch up on what was missed
                        self._set(run_id)
                    async for note in conn.notifies():
                        self._set(note.payload)
            except psycopg.Error:
                logger.warning("event listener lost its connection; reconnecting",
                               exc_info=True)
                self._listening.set()  # readers fall back to the safety poll meanwhile
                await asyncio.sleep(RECONNECT_S)

    async def follow(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """Events with ``seq > after``: stored ones first, then live ones; ends after ``final``."""
        waker = asyncio.Event()
        self._wakers[run_id].add(waker)
        try:
            while True:
                waker.clear()  # before the read, so a wake-up during it is not lost
                for event in await asyncio.to_thread(self.store.events, run_id, after):
                    after = int(event["seq"])
                    yield event
                    if event.get("type") == "final":
                        return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waker.wait(), self.safety_poll_s)
        finally:
            self._wakers[run_id].discard(waker)
            if not self._wakers[run_id]:
                del self._wakers[run_id]
