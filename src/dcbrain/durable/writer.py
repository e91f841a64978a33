"""One thread that writes the events and journal rows of every run of a process, in batches.

With hundreds of runs in flight on a worker, a write per event or per journal row (each a
round trip and a commit, each taking a connection) costs more than the runs themselves.
Here everything queued while the last batch was being written goes into the next one:
one transaction for the events and journal rows of many runs (group commit).

Batches are written one after the other, each at once or not at all, so a crash loses a
suffix of what was queued, never something in the middle: a journal row or event that is
stored implies every one queued before it is stored too. A caller that needs its row
stored before it goes on (a finished call, a memory commit) waits for its batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from dcbrain.durable.store import DurableStore, JournalRow
from dcbrain.exceptions import DatabaseUnavailable, StoreWriteError

logger = logging.getLogger("dcbrain.durable")

#: Seconds between attempts at writing a batch while the database is down.
OUTAGE_RETRY_S: Final = 0.5


@dataclass(eq=False)
class _Batch:
    events: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    journal: list[JournalRow] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    #: Coroutines waiting for this batch: told on their own loops.
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.journal)


class StoreWriter:
    """Queues events and journal rows for ``store`` and writes them in batches."""

    def __init__(self, store: DurableStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._batch = _Batch()
        self._writing: _Batch | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="dcbrain-store-writer",
                                        daemon=True)
        self._thread.start()

    def add_events(self, run_id: str, records: list[dict[str, Any]]) -> None:
        """Queue events of a run (they are stored in a moment; nothing waits)."""
        self._enqueue(lambda batch: batch.events[run_id].extend(records))

    def add_journal(self, run_id: str, key: str, row: dict[str, Any], *,
                    wait: bool = True) -> None:
        """Queue a journal row; with ``wait``, return once it is stored (or raise)."""
        batch = self._enqueue(lambda batch: batch.journal.append((run_id, key, row)))
        if wait:
            self._settle(batch)

    async def awrite_journal(self, run_id: str, key: str, row: dict[str, Any]) -> None:
        """:meth:`add_journal` for a coroutine: waits for the batch without blocking its loop."""
        loop = asyncio.get_running_loop()
        stored: asyncio.Future[None] = loop.create_future()

        def add(batch: _Batch) -> None:
            batch.journal.append((run_id, key, row))
            batch.waiters.append((loop, stored))

        self._enqueue(add)
        await stored

    def flush(self) -> None:
        """Return once everything queued so far is stored (or raise if it was not)."""
        with self._lock:
            # The queued batch if any (written after the one being written), else that one.
            batch = self._batch if self._batch else self._writing
        if batch is not None:
            self._settle(batch)

    def close(self) -> None:
        """Store what is queued and stop the thread."""
        with self._lock:
            self._closed = True
            self._wake.notify()
        self._thread.join()

    # -- the writer thread -----------------------------------------------------------------

    def _enqueue(self, add: Callable[[_Batch], None]) -> _Batch:
        with self._lock:
            if self._closed:
                raise StoreWriteError("the store writer is closed")
            batch = self._batch
            add(batch)
            self._wake.notify()
            return batch

    @staticmethod
    def _settle(batch: _Batch) -> None:
        batch.done.wait()
        if batch.error is not None:
            raise StoreWriteError(f"could not store: {batch.error}") from batch.error

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._batch and not self._closed:
                    self._wake.wait()
                if not self._batch and self._closed:
                    return
                batch, self._batch = self._batch, _Batch()
                self._writing = batch
            try:
                self._write(batch)
            except Exception as exc:  # the runs go on; their waiters hear of it
                batch.error = exc
                logger.exception("could not store %d event(s) and %d journal row(s)",
                                 sum(map(len, batch.events.values())), len(batch.journal))
            with self._lock:
                self._writing = None
            batch.done.set()
            for loop, stored in batch.waiters:
                with contextlib.suppress(RuntimeError):  # that loop is closed
                    loop.call_soon_threadsafe(_settle_future, stored, batch.error)


    def _write(self, batch: _Batch) -> None:
        """Write the batch, again and again while the database is down (every row of it
        is written only if not stored yet): the runs waiting on it go on once it is back."""
        while True:
            try:
                self.store.write_batch(batch.events, batch.journal)
                return
            except DatabaseUnavailable as exc:
                with self._lock:
                    closed = self._closed
                if closed:
                    raise
                logger.warning("the database is unavailable; writing again in %.1f s: %s",
                               OUTAGE_RETRY_S, exc)
                time.sleep(OUTAGE_RETRY_S)


def _settle_future(stored: asyncio.Future[None], error: BaseException | None) -> None:
    if stored.done():  # its waiter was cancelled
        return
    if error is None:
        stored.set_result(None)
    else:
        failure = StoreWriteError(f"could not store: {error}")
        failure.__cause__ = error
        stored.set_exception(failure)
