"""The store writer: many runs' rows in few transactions, in order, whole or not at all."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from dcbrain.durable import DurableStore
from dcbrain.durable.store import JournalRow
from dcbrain.durable.writer import StoreWriteError, StoreWriter
from support.durable_harness import Backend


class _Gate:
    """Holds the writer inside its first batch until released; counts batches."""

    def __init__(self, store: DurableStore) -> None:
        self.store = store
        self.batches: list[tuple[int, int]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = False
        self._original = store.write_batch

    def write_batch(self, events: dict[str, list[dict[str, Any]]],
                    journal: Sequence[JournalRow]) -> None:
        self.batches.append((sum(map(len, events.values())), len(journal)))
        self.entered.set()
        self.release.wait(10)
        if self.fail:
            raise OSError("the disk is full")
        self._original(events, journal)


class _WatchedEvent(threading.Event):
    """An event that tells when someone starts waiting for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


@pytest.fixture
def gate(backend: Backend) -> _Gate:
    gate = _Gate(backend.store)
    backend.store.write_batch = gate.write_batch  # type: ignore[method-assign]
    return gate


def test_rows_queued_during_a_write_go_in_the_next_batch_together(
    backend: Backend, gate: _Gate
) -> None:
    writer = StoreWriter(backend.store)
    writer.add_events("r0", [{"type": "a", "seq": 0}])
    assert gate.entered.wait(5)  # the writer holds batch 1; everything below waits for it
    for run in range(1, 21):
        writer.add_events(f"r{run}", [{"type": "a", "seq": 0}, {"type": "b", "seq": 1}])
    writer.add_journal("r1", "call|x", {"result": 1}, wait=False)
    gate.release.set()
    writer.flush()
    writer.close()
    assert gate.batches == [(1, 0), (40, 1)]
    assert [e["type"] for e in backend.store.events("r20")] == ["a", "b"]
    assert backend.store.journal("r1") == [{"result": 1}]


def test_a_waited_row_is_stored_when_add_returns(backend: Backend) -> None:
    writer = StoreWriter(backend.store)
    for n in range(50):
        writer.add_journal("r1", f"clock|{n}", {"value": float(n)}, wait=n == 49)
    # The last one was waited for: it and every row queued before it are stored, in order.
    assert [row["value"] for row in backend.store.journal("r1")] == [float(n) for n in range(50)]
    writer.close()


def test_a_failed_batch_raises_to_whoever_waits_and_the_writer_goes_on(
    backend: Backend, gate: _Gate
) -> None:
    gate.fail = True
    gate.release.set()
    writer = StoreWriter(backend.store)
    writer.add_events("r1", [{"type": "a", "seq": 0}])
    with pytest.raises(StoreWriteError, match="the disk is full"):
        writer.add_journal("r1", "call|x", {"result": 1})
    gate.fail = False  # the writer goes on with the next batch
    writer.add_journal("r1", "call|y", {"result": 2})
    writer.close()
    assert backend.store.journal("r1") == [{"result": 2}]
    with pytest.raises(StoreWriteError, match="closed"):
        writer.add_events("r1", [{"type": "b", "seq": 1}])


def test_flush_returns_once_events_are_readable(backend: Backend) -> None:
    writer = StoreWriter(backend.store)
    for seq in range(30):
        writer.add_events("r1", [{"type": "e", "seq": seq}])
    writer.flush()
    assert [e["seq"] for e in backend.store.events("r1")] == list(range(30))
    writer.close()


def test_a_batch_replayed_keeps_the_first_rows(backend: Backend) -> None:
    store = backend.store
    store.write_batch({"r1": [{"type": "a", "seq": 0}]}, [("r1", "call|x", {"result": 1})])
    store.write_batch({"r1": [{"type": "changed", "seq": 0}, {"type": "b", "seq": 1}],
                       "r2": [{"type": "c", "seq": 0}]},
                      [("r1", "call|x", {"result": 2}), ("r2", "call|x", {"result": 3})])
    assert [e["type"] for e in store.events("r1")] == ["a", "b"]
    assert store.journal("r1") == [{"result": 1}]
    assert store.journal("r2") == [{"result": 3}]


def test_flush_waits_for_the_batch_being_written(backend: Backend, gate: _Gate) -> None:
    writer = StoreWriter(backend.store)
    writer.add_events("r1", [{"type": "a", "seq": 0}])
    assert gate.entered.wait(5)  # batch 1 is being written; nothing else is queued
    waiting = _WatchedEvent()
    writer._writing.done = waiting  # type: ignore[union-attr]  # batch 1, being written
    flushed = threading.Event()
    flusher = threading.Thread(target=lambda: (writer.flush(), flushed.set()))
    flusher.start()
    assert waiting.waited.wait(5)  # flush waits for batch 1 ...
    assert not flushed.is_set()  # ... still in the store's hands: the store may not close yet
    gate.release.set()
    flusher.join(5)
    assert flushed.is_set()
    assert [e["type"] for e in backend.store.events("r1")] == ["a"]
    writer.close()


async def test_a_coroutine_waits_for_its_row_without_blocking_its_loop(
    backend: Backend, gate: _Gate
) -> None:
    writer = StoreWriter(backend.store)
    writer.add_events("r0", [{"type": "a", "seq": 0}])
    assert gate.entered.wait(5)  # the writer is held inside batch 1
    ticks = 0
    ticked = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            if ticks == 5:
                ticked.set()
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    stored = asyncio.create_task(writer.awrite_journal("r1", "call|x", {"result": 1}))
    await asyncio.wait_for(ticked.wait(), 5)  # the loop goes on with everything else ...
    assert not stored.done()  # ... while its batch waits for batch 1
    gate.release.set()
    await asyncio.wait_for(stored, 5)
    assert backend.store.journal("r1") == [{"result": 1}]
    ticker.cancel()
    writer.close()


async def test_a_failed_batch_raises_in_the_waiting_coroutine(
    backend: Backend, gate: _Gate
) -> None:
    gate.fail = True
    gate.release.set()
    writer = StoreWriter(backend.store)
    with pytest.raises(StoreWriteError, match="the disk is full"):
        await writer.awrite_journal("r1", "call|x", {"result": 1})
    gate.fail = False
    await writer.awrite_journal("r1", "call|y", {"result": 2})
    assert backend.store.journal("r1") == [{"result": 2}]
    writer.close()
