"""The run loop of a worker: every run on one loop, a SystemExit fails only its own run,
a cancelled execution aborts its run."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dcbrain.durable import RunExecutor
from dcbrain.durable.loop import RunLoop
from support.durable_brains import CountingTools
from support.durable_harness import Backend


async def _raising(exc: BaseException) -> None:
    await asyncio.sleep(0.01)
    raise exc


async def _in_a_child_task(exc: BaseException) -> None:
    await asyncio.gather(asyncio.sleep(0.05), asyncio.ensure_future(_raising(exc)))


async def _counting(seconds: float) -> int:
    ticks = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ticks += 1
        await asyncio.sleep(0.005)
    return ticks


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt()])
def test_a_base_exception_reaches_its_awaiter_and_the_loop_goes_on(exc: BaseException) -> None:
    runs = RunLoop()
    try:
        other = runs.submit(_counting(0.4))
        failing = runs.submit(_in_a_child_task(exc))
        with pytest.raises(type(exc)):
            failing.result(5)
        assert other.result(5) > 20  # the other run went on all along
        assert runs.submit(asyncio.sleep(0, "still serving")).result(5) == "still serving"
    finally:
        runs.close()


async def test_a_cancelled_execution_aborts_its_run_and_records_how_it_ended(
    backend: Backend, counting: CountingTools
) -> None:
    counting.hold = threading.Event()  # step_two blocks until released
    executor = RunExecutor(backend.store, counting.brain)
    backend.store.save_run("r1", "c1", "queued", {"question": "count"})
    execution = asyncio.create_task(executor.execute("r1", "c1", "count"))
    try:
        assert await asyncio.to_thread(counting.entered.wait, 10)
        execution.cancel()  # not a worker stopping: the run ends, as aborted
        summary = await asyncio.wait_for(execution, 10)
        assert summary["status"] == "aborted"
        record = backend.store.get_run("r1")
        assert record is not None and record.status == "aborted"
        assert backend.store.events("r1")[-1]["type"] == "final"
        # The brain stopped while step_two still blocks: it was not left running.
        assert executor.runs.in_flight() == 0
    finally:
        counting.hold.set()
    executor.close()
    assert counting.count("step_three", "started") == 0


def test_close_stops_an_idle_loop_and_spares_one_with_runs_in_flight() -> None:
    busy = RunLoop()
    running = busy.submit(asyncio.sleep(0.3, "done"))
    busy.close(timeout_s=1)
    assert not busy.loop.is_closed()  # a stopping worker leaves its runs to be resumed
    assert running.result(5) == "done"
    busy.close(timeout_s=5)
    assert busy.loop.is_closed()

    idle = RunLoop()
    idle.close(timeout_s=5)
    assert idle.loop.is_closed()


async def test_a_second_execution_of_a_run_executing_here_records_nothing_of_its_own(
    backend: Backend, counting: CountingTools
) -> None:
    # DBOS may hand a run out again while this worker executes it (its worker was called
    # dead while it was not): the second execution waits for the first, never runs the
    # brain (which would refuse it as busy) and never records an outcome of its own.
    counting.hold = threading.Event()
    executor = RunExecutor(backend.store, counting.brain)
    backend.store.save_run("r1", "c1", "queued", {"question": "count"})
    first = asyncio.create_task(executor.execute("r1", "c1", "count"))
    try:
        assert await asyncio.to_thread(counting.entered.wait, 10)
        second = asyncio.create_task(executor.execute("r1", "c1", "count"))
        await asyncio.sleep(0)
        assert not second.done()  # it waits for the first
        record = backend.store.get_run("r1")
        assert record is not None and record.status == "running"
    finally:
        counting.hold.set()
    summaries = await asyncio.wait_for(asyncio.gather(first, second), 30)
    executor.close()
    record = backend.store.get_run("r1")
    assert summaries[0] == summaries[1] and summaries[0]["status"] == "succeeded"
    assert record is not None and record.status == "succeeded"
    assert record.data["executions"] == 1 and record.data["executor_id"] == "local"
    assert [counting.count(name, "finished") for name in ("step_one", "step_two",
                                                          "step_three")] == [1, 1, 1]
