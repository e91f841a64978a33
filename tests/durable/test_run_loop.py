"""The run loop of a worker: every run on one loop, a SystemExit fails only its own run."""

from __future__ import annotations

import asyncio
import time

import pytest

from dcbrain.durable.loop import RunLoop


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


def test_a_run_awaited_from_another_loop_is_not_cancelled_with_its_caller() -> None:
    runs = RunLoop()
    finished: list[str] = []

    async def run() -> None:
        await asyncio.sleep(0.2)
        finished.append("run")

    async def caller() -> None:
        waiting = asyncio.create_task(runs.run(run()))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    try:
        asyncio.run(caller())
        deadline = time.monotonic() + 5
        while not finished and time.monotonic() < deadline:
            time.sleep(0.01)
        assert finished == ["run"]  # it stops through its abort, never by a cancellation
    finally:
        runs.close()


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
