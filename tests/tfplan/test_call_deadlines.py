"""A call that does not return never holds its plan past the plan's time limit.

At ``Limits.timeout_s`` an async callable is cancelled and a sync one is abandoned (its
thread cannot be killed): the plan ends with ``TimeLimitExceeded`` at the call's line,
under both isolations, through ``run()`` and ``arun()``. An abandoned call's late
return is ignored. ``Tool(timeout_s=...)`` ends one call at its own limit instead.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dcbrain.chain import TFChainInterpreter
from dcbrain.journal import CallJournal
from dcbrain.tfplan import (
    CallRecord,
    Interpreter,
    Limits,
    TFCallError,
    TFToolTimeout,
    TimeLimitExceeded,
)
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool
from support.deadline import outcome_within
from support.waiting import wait_until

LIMIT_S = 2.0
#: "Does not hang" bound: the run must end well within this (it aims at the limit + 1 s).
BOUND_S = LIMIT_S + 3.0
PLAN = "first = echo(x=1)\nhang(query='x')\n"
ISOLATIONS: list[Isolation] = ["inprocess", "process"]


class Hang:
    """A sync and an async callable that wait until the test releases them."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.entered = threading.Event()
        self.returned = threading.Event()
        self.cancelled = False
        self.thread_id = 0

    def back_from_the_host_call(self) -> bool:
        """Whether the thread that ran :meth:`sync` has left the interpreter's host call
        (where a late return is handled), or ended."""
        frame = sys._current_frames().get(self.thread_id)
        while frame is not None:
            if frame.f_code.co_filename.endswith(os.path.join("tfplan", "host.py")):
                return False
            frame = frame.f_back
        return True

    def sync(self, query: str) -> str:
        self.thread_id = threading.get_ident()
        self.entered.set()
        self.released.wait(60)
        self.returned.set()
        return "late"

    async def asynchronous(self, query: str) -> str:
        self.entered.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "late"


@pytest.fixture
def hang() -> Iterator[Hang]:
    hanging = Hang()
    yield hanging
    hanging.released.set()


def echo(x: int) -> int:
    return x


def ended_within(seconds: float, work: Callable[[], Any]) -> tuple[BaseException | None, float]:
    """What ``work`` raised and how long it took (within ``seconds``, or the test fails)."""
    started = time.monotonic()
    _, error = outcome_within(seconds, work)
    return error, time.monotonic() - started


class Calls:
    """An observer that keeps every report it gets."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str, str | None]] = []

    def on_call_start(self, record: CallRecord) -> None:
        self.reports.append(("start", record.name, record.error))

    def on_call_end(self, record: CallRecord) -> None:
        self.reports.append(("end", record.name, record.error))

    def on_call_abandoned(self, record: CallRecord) -> None:
        self.reports.append(("abandoned", record.name, record.error))


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("entry", ["run", "arun"])
def test_a_hung_call_ends_the_plan_at_its_time_limit_at_the_call(
    isolation: Isolation, kind: str, entry: str, hang: Hang
) -> None:
    func = hang.sync if kind == "sync" else hang.asynchronous
    interpreter = Interpreter({"hang": func, "echo": echo}, limits=Limits(timeout_s=LIMIT_S),
                              isolation=isolation)
    if entry == "run":
        error, took = ended_within(BOUND_S, lambda: interpreter.run(PLAN))
    else:
        error, took = ended_within(BOUND_S, lambda: asyncio.run(interpreter.arun(PLAN)))
    assert isinstance(error, TimeLimitExceeded), error
    assert (error.line, error.source_line) == (2, "hang(query='x')")
    assert took >= LIMIT_S
    assert [record.name for record in error.trace] == ["echo", "hang"]
    if kind == "sync":  # abandoned: still running, counted
        assert not hang.returned.is_set()
        assert error.abandoned_calls == error.partial_result.abandoned_calls == 1
        assert "abandoned hang()" in error.message
    else:  # cancelled
        assert error.abandoned_calls == 0


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_an_abandoned_call_is_reported_once_and_its_late_return_is_ignored(
    isolation: Isolation, hang: Hang
) -> None:
    calls = Calls()
    interpreter = Interpreter({"hang": hang.sync, "echo": echo}, observer=calls,
                              limits=Limits(timeout_s=LIMIT_S), isolation=isolation)
    error, _ = ended_within(BOUND_S, lambda: interpreter.run(PLAN))
    assert isinstance(error, TimeLimitExceeded)
    abandoned = "abandoned: the plan stopped waiting for this call"
    expected = [("start", "echo", None), ("end", "echo", None), ("start", "hang", None),
                ("abandoned", "hang", abandoned), ("end", "hang", abandoned)]
    assert calls.reports == expected
    record = error.trace[1]
    hang.released.set()
    assert hang.returned.wait(10)
    # the late return reaches the dispatcher (it must not count)
    wait_until(hang.back_from_the_host_call, what="the late return handled")
    assert calls.reports == expected
    assert (record.result, record.error) == (None, abandoned)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_parallel_branch_that_hangs_is_abandoned_too(isolation: Isolation, hang: Hang) -> None:
    interpreter = Interpreter({"hang": hang.sync, "echo": echo},
                              limits=Limits(timeout_s=LIMIT_S), isolation=isolation)
    plan = "a, b = parallel(echo(x=1), hang(query='x'))\n"
    error, _ = ended_within(BOUND_S, lambda: interpreter.run(plan))
    assert isinstance(error, TimeLimitExceeded)
    assert error.line == 1 and error.abandoned_calls == 1


def test_a_plan_that_ends_in_time_is_untouched(hang: Hang) -> None:
    interpreter = Interpreter({"echo": echo}, limits=Limits(timeout_s=LIMIT_S))
    result = interpreter.run("echo(x=5)")
    assert (result.value, result.abandoned_calls) == (5, 0)
    assert result.trace[0].duration_s > 0 and result.trace[0].error is None


def journaled_interpreter(tool: Tool, journal: CallJournal, isolation: Isolation,
                          timeout_s: float = LIMIT_S) -> TFChainInterpreter:
    return TFChainInterpreter({}, tools=[tool], journal=journal, isolation=isolation,
                              limits=Limits(timeout_s=timeout_s))


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_an_abandoned_sync_tool_is_never_journaled_as_finished(
    isolation: Isolation, hang: Hang
) -> None:
    journal = CallJournal()
    interpreter = journaled_interpreter(Tool(hang.sync, name="hang"), journal, isolation)
    error, _ = ended_within(BOUND_S, lambda: interpreter.evaluate("hang(query='x')"))
    assert isinstance(error, TimeLimitExceeded) and error.abandoned_calls == 1
    assert_release_is_not_journaled(hang, journal)


def assert_release_is_not_journaled(hang: Hang, journal: CallJournal) -> None:
    """Let the abandoned call return: its result must never reach the journal."""
    hang.released.set()
    assert hang.returned.wait(10)
    # the journal write would follow the return at once; give it ample time to (not) happen
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline and not journal.entries():
        time.sleep(0.05)
    assert journal.entries() == []


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_cancelling_a_run_abandons_its_sync_call(isolation: Isolation, hang: Hang) -> None:
    journal = CallJournal()
    interpreter = journaled_interpreter(Tool(hang.sync, name="hang"), journal, isolation,
                                        timeout_s=60)

    async def cancel_while_hanging() -> None:
        task = asyncio.ensure_future(interpreter.aevaluate("hang(query='x')"))
        while not hang.entered.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    error, _ = ended_within(10, lambda: asyncio.run(cancel_while_hanging()))
    assert error is None
    assert_release_is_not_journaled(hang, journal)


# -- a call's own limit ------------------------------------------------------------------

@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_past_its_own_timeout_fails_the_call_at_its_line(
    isolation: Isolation, kind: str, hang: Hang
) -> None:
    func = hang.sync if kind == "sync" else hang.asynchronous
    journal = CallJournal()
    interpreter = journaled_interpreter(Tool(func, name="hang", timeout_s=0.5), journal,
                                        isolation, timeout_s=30)
    error, took = ended_within(10, lambda: interpreter.evaluate("a = 1\nhang(query='x')"))
    assert isinstance(error, TFToolTimeout) and isinstance(error, TFCallError)
    assert (error.line, error.kind) == (2, "TFToolTimeout")
    assert "tool 'hang' did not return within its timeout_s of 0.5 s" in str(error)
    assert took < 10
    [entry] = journal.entries()
    assert not entry.ok and (entry.error or "").startswith("TFToolTimeout")
    if kind == "async":
        assert hang.cancelled


def test_a_tool_timeout_leaves_a_fast_call_and_the_tools_own_errors_alone() -> None:
    def flaky(x: int) -> int:
        if x < 0:
            raise TimeoutError("upstream timed out")
        return x * 2

    tool = Tool(flaky, timeout_s=5)
    assert tool.call(x=2) == 4
    assert asyncio.run(tool.acall(x=3)) == 6
    with pytest.raises(TimeoutError, match="upstream") as raised:
        tool.call(x=-1)
    assert not isinstance(raised.value, TFToolTimeout)


@pytest.mark.parametrize("bad", [0, -1, True, "5"])
def test_a_timeout_must_be_a_positive_number(bad: Any) -> None:
    with pytest.raises(ValueError, match="timeout_s must be a positive number"):
        Tool(echo, timeout_s=bad)


def test_a_chain_past_its_own_timeout_fails_the_call_at_its_line() -> None:
    from dcbrain import Chain, FunctionLLM

    async def slow_reply(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(30)
        return "late"

    chain = Chain(name="summarize", llm=FunctionLLM(slow_reply), prompt="{{ text }}",
                  timeout_s=0.5)
    interpreter = TFChainInterpreter({"summarize": chain}, isolation="inprocess",
                                     limits=Limits(timeout_s=30))
    error, _ = ended_within(10, lambda: interpreter.evaluate("x = 1\nsummarize(text='a')"))
    assert isinstance(error, TFToolTimeout) and error.line == 2
    assert "chain 'summarize' did not finish within its timeout_s of 0.5 s" in str(error)
