"""A brain's run never waits on a hung call past its plan's time limit.

The plan's ``Limits.timeout_s`` ends the attempt (the brain's own ``timeout`` never
interrupts a running plan): the hung sync call is abandoned and announced, the planner
hears of the ``TimeLimitExceeded`` and replans. A tool's own ``timeout_s`` fails one call
with ``TFToolTimeout``, which the planner reacts to the same way.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.context import BrainResult
from dcbrain.tfplan import Limits
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.deadline import outcome_within

LIMIT_S = 2.0
BOUND_S = LIMIT_S + 3.0


@pytest.fixture
def released() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()


def hanging_brain(gate: threading.Event, isolation: Isolation, *,
                  tool_timeout_s: float | None = None, timeout_s: float = LIMIT_S) -> DCBrain:
    def lookup(query: str) -> str:
        """Look something up (never answers)."""
        gate.wait(60)
        return "late"

    planner = ScriptedLLM([plan("return lookup(query='x')"), plan("return 'gave up'")])
    return DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                   tools=[Tool(lookup, timeout_s=tool_timeout_s)],
                   limits=Limits(timeout_s=timeout_s), isolation=isolation, timeout=600)


def run_within(seconds: float, brain: DCBrain, *, asynchronous: bool) -> BrainResult:
    def work() -> BrainResult:
        if asynchronous:
            return asyncio.run(brain.async_run("q", conversation_id="c1"))
        return brain.run("q", conversation_id="c1")

    result, error = outcome_within(seconds, work)
    assert error is None, error
    return result  # type: ignore[no-any-return]


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_hung_tool_ends_the_attempt_at_the_plans_time_limit(
    isolation: Isolation, asynchronous: bool, released: threading.Event
) -> None:
    brain = hanging_brain(released, isolation)
    # the first attempt waits out its limit; the replan answers at once
    result = run_within(BOUND_S + 2.0, brain, asynchronous=asynchronous)
    assert (result.status, result.final_result) == ("succeeded", "gave up")
    finished = [e for e in result.events if e["type"] == "plan_finished"]
    assert finished[0]["error_kind"] == "TimeLimitExceeded"
    assert "abandoned lookup()" in finished[0]["error"]
    [abandoned] = [e for e in result.events if e["type"] == "call_abandoned"]
    assert (abandoned["name"], abandoned["kind"], abandoned["line"]) == ("lookup", "tool", 1)
    ends = [e for e in result.events if e["type"] == "call_finished" and e["kind"] == "tool"]
    assert [(e["call_id"], e["status"]) for e in ends] == [(abandoned["call_id"], "error")]


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_tool_past_its_own_timeout_is_a_failure_the_planner_replans_on(
    isolation: Isolation, released: threading.Event
) -> None:
    brain = hanging_brain(released, isolation, tool_timeout_s=0.5, timeout_s=60)
    result = run_within(20, brain, asynchronous=False)
    assert (result.status, result.final_result) == ("succeeded", "gave up")
    finished = [e for e in result.events if e["type"] == "plan_finished"]
    assert finished[0]["error_kind"] == "TFToolTimeout"
    assert "did not return within its timeout_s of 0.5 s" in finished[0]["error"]
    assert not [e for e in result.events if e["type"] == "call_abandoned"]
