"""Calls that outlive their deadline hold threads; the process holds a bounded number.

A sync tool that ignores its ``timeout_s``, or a sync callable that outlives its plan's
time limit, is abandoned: its thread runs on until it returns. Past the process's limit
of such threads, the next call of a callable that holds one of them fails at once with
``TFToolUnavailable`` instead of taking one more thread; other callables are still
called, and the callable is called again once its threads returned. Retries start no try
and sleep no backoff past the plan's own time limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dcbrain import Tool
from dcbrain.exceptions import RetriesExhausted
from dcbrain.retries import Backoff, RetryPolicy, call_deadline, call_with_retries
from dcbrain.tfplan import Interpreter, Limits, TFCallError, TFToolTimeout, TFToolUnavailable
from dcbrain.tfplan.abandoned import (
    MAX_ABANDONED_THREADS,
    abandoned_threads,
    set_max_abandoned_threads,
)
from dcbrain.tfplan.errors import TimeLimitExceeded
from dcbrain.tfplan.interpreter import Isolation

ISOLATIONS = [pytest.param("inprocess", id="inprocess"), pytest.param("process", id="sandbox")]
CAP = 3


class Stuck:
    """A sync callable that returns only once released; counts its calls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        assert self.release.wait(60), "never released"
        return "late"

    def finish(self) -> None:
        """Release every stuck call."""
        self.release.set()


@pytest.fixture
def capped() -> Iterator[None]:
    assert abandoned_threads.total == 0, "an earlier test left abandoned threads"
    set_max_abandoned_threads(CAP)
    yield
    set_max_abandoned_threads(MAX_ABANDONED_THREADS)


def wait_until_free(name: str) -> None:
    """Until the threads of ``name`` are counted free (they end right after returning)."""
    for _ in range(6000):
        if abandoned_threads.running[name] == 0:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"threads of {name} still counted")


def test_a_tool_past_the_cap_fails_fast_and_others_still_run(capped: None) -> None:
    stuck = Stuck()

    def hang() -> str:
        return stuck()

    def quick() -> str:
        return "quick"

    hanging = Tool(hang, timeout_s=0.05)
    other = Tool(quick, timeout_s=5)
    try:
        for _ in range(CAP):
            with pytest.raises(TFToolTimeout):
                hanging.call()
        assert abandoned_threads.running["hang"] == CAP
        with pytest.raises(TFToolUnavailable) as caught:
            hanging.call()
        assert stuck.calls == CAP, "the refused call started no thread"
        message = str(caught.value)
        assert "tool 'hang' was not called" in message and f"at most {CAP}" in message
        assert other.call() == "quick", "a tool without abandoned threads is still called"
    finally:
        stuck.finish()
    wait_until_free("hang")
    assert hanging.call() == "late", "called again once its threads returned"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_callable_abandoned_by_its_plans_fails_fast_past_the_cap(
    isolation: Isolation, capped: None,
) -> None:
    stuck = Stuck()
    interpreter = Interpreter({"stuck": stuck, "fine": lambda: "fine"}, isolation=isolation,
                              limits=Limits(timeout_s=3))  # time for a new worker
    try:
        for _ in range(CAP):
            with pytest.raises(TimeLimitExceeded, match="abandoned stuck"):
                interpreter.run("stuck()")
        assert abandoned_threads.running["stuck"] == CAP
        with pytest.raises(TFCallError) as caught:
            interpreter.run("fine()\nstuck()")
        assert isinstance(caught.value, TFToolUnavailable)
        assert caught.value.line == 2 and "stuck() was not called" in caught.value.message
        assert stuck.calls == CAP
        assert [record.name for record in caught.value.trace] == ["fine", "stuck"]
    finally:
        stuck.finish()
    wait_until_free("stuck")


def test_no_retry_sleeps_past_the_callers_deadline() -> None:
    tries: list[float] = []

    def flaky() -> str:
        tries.append(time.monotonic())
        raise ConnectionError("down")

    policy = RetryPolicy.of(5, None, Backoff.fixed(30.0))
    hooks: Any = type("Hooks", (), {"retrying": lambda self, *args: None})()
    token = call_deadline.set(time.monotonic() + 5.0)
    try:
        with pytest.raises(RetriesExhausted, match="no time is left") as caught:
            call_with_retries(policy, flaky, hooks)
    finally:
        call_deadline.reset(token)
    assert len(tries) == 1 and caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, ConnectionError)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_plan_call_retries_only_within_the_plans_time_limit(isolation: Isolation) -> None:
    tries: list[int] = []

    def fetch() -> str:
        """Fails the first two times."""
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("down")
        return "up"

    # a 0.05 s backoff fits the plan's 20 s: the third try answers
    quick = Tool(fetch, retries=5, backoff=0.05)
    assert Interpreter(tools=[quick], isolation=isolation,
                       limits=Limits(timeout_s=20)).run("fetch()").value == "up"
    tries.clear()
    # a 60 s backoff does not: the first failure ends the call, with no sleep
    slow = Tool(fetch, retries=5, backoff=60.0)
    with pytest.raises(TFCallError, match="no time is left") as caught:
        Interpreter(tools=[slow], isolation=isolation, limits=Limits(timeout_s=20)).run(
            "fetch()")
    assert len(tries) == 1
    assert not isinstance(caught.value, TimeLimitExceeded)
