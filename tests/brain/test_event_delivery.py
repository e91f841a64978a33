"""Subscribers get a run's events off the run's threads, each in order, final last."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.delivery import Fanout
from dcbrain.events import Event
from support.brain_scripts import add, plan, verdict

#: Bounds a wait that only a defect makes long (never what a test measures).
STUCK_S = 30.0


def adding_brain() -> DCBrain:
    return DCBrain(default_llm=ScriptedLLM([plan("return add(a=1, b=2)")]),
                   default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])


def test_a_slow_subscriber_holds_neither_the_run_nor_the_other_subscribers() -> None:
    brain = adding_brain()
    fast: list[Event] = []
    slow: list[Event] = []
    validated = threading.Event()

    def quick(event: Event) -> None:
        fast.append(event)
        if event.type == "validation":
            validated.set()

    def stuck_until_the_run_validated(event: Event) -> None:
        # with subscribers called in turn on the run's thread, this waits forever: the
        # plan ran, and the other subscriber heard of it, while this one was stuck
        if not slow:
            assert validated.wait(STUCK_S), "the slow subscriber held the run"
        slow.append(event)

    brain.subscribe(stuck_until_the_run_validated)
    brain.subscribe(quick)
    result = brain.run("q")
    assert result.status == "succeeded"
    seqs = [event["seq"] for event in result.events]
    assert [event.seq for event in fast] == seqs == [event.seq for event in slow]
    assert slow[-1].type == fast[-1].type == "final"  # the result waited for both


def test_a_subscriber_that_raises_misses_only_that_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    brain = adding_brain()
    seen: list[str] = []

    def flaky(event: Event) -> None:
        if event.type == "call_started":
            raise RuntimeError("boom")
        seen.append(str(event.type))

    brain.subscribe(flaky)
    with caplog.at_level(logging.ERROR, logger="dcbrain.events"):
        result = brain.run("q")
    assert result.status == "succeeded"
    types = [str(event["type"]) for event in result.events]
    errors = [e for e in result.events if e["type"] == "error" and e["source"] == "subscriber"]
    assert errors and all("flaky failed on call_started event" in e["error"] for e in errors)
    assert seen == [t for t in types if t != "call_started"]
    assert types[-1] == "final"  # its failures were told before the run's end
    assert any("boom" in record.getMessage() for record in caplog.records)


def test_an_async_subscriber_is_awaited_on_the_run_loop_in_order() -> None:
    brain = adding_brain()
    seen: list[int] = []
    loops: set[int] = set()

    async def on_event(event: Event) -> None:
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0)
        seen.append(event.seq)

    async def main() -> tuple[Any, int]:
        result = await brain.async_run("q", on_event=on_event)
        return result, id(asyncio.get_running_loop())

    result, loop = asyncio.run(main())
    assert seen == [event["seq"] for event in result.events]
    assert loops == {loop}


def test_a_subscriber_that_falls_too_far_behind_is_cut_off() -> None:
    release = threading.Event()
    failures: list[str] = []
    stuck: list[int] = []
    fine: list[int] = []
    got = threading.Semaphore(0)

    def never_keeps_up(event: int) -> None:
        stuck.append(event)
        release.wait(STUCK_S)

    def keeps_up(event: int) -> None:
        fine.append(event)
        got.release()

    fanout: Fanout[int] = Fanout([never_keeps_up, keeps_up], max_pending=5,
                                 on_failure=lambda s, e, failure, error: failures.append(failure))
    for number in range(20):
        fanout.push(number)
        assert got.acquire(timeout=STUCK_S)  # this one is never behind
    assert fanout.wait(STUCK_S)  # the lane cut off is not waited for
    assert fine == list(range(20))
    assert len(failures) == 1 and "never_keeps_up" in failures[0]
    assert "fell 5 events behind" in failures[0]
    release.set()
    assert stuck == [0]  # what was queued for it was dropped: the memory stays bounded


def test_events_pushed_from_many_threads_reach_each_subscriber_in_push_order() -> None:
    lock = threading.Lock()
    pushed: list[int] = []
    got: list[int] = []
    fanout: Fanout[int] = Fanout([got.append], on_failure=lambda *args: None)

    def push(base: int) -> None:
        for number in range(base, base + 200):
            with lock:  # as a recorder numbers and pushes under its lock
                pushed.append(number)
                fanout.push(number)

    threads = [threading.Thread(target=push, args=(base,)) for base in (0, 1000, 2000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fanout.wait(STUCK_S)
    assert got == pushed
