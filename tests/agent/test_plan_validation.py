"""A malformed plan is a replannable error naming the step, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.agent import PlanExecuteAgent, Step, validate_plan
from dcbrain.exceptions import TFPlanError
from dcbrain.tools import Tool
from support.call_log import CallLog

GOOD = [Step(1, "work", {"n": 1})]


@pytest.mark.parametrize(
    ("bad_plan", "message"),
    [
        ({"steps": []}, "the plan must be a list of steps, got dict"),
        (None, "the plan must be a list of steps, got NoneType"),
        (
            [Step(1, "work", {"n": 1}), Step(2, "teleport", {})],
            "step 2 (index 1): unknown tool 'teleport'",
        ),
        ([Step(1, "work", ["n", 1])], "step 1 (index 0): args must be a dict, got list"),  # type: ignore[arg-type]
        (
            [Step(1, "work", {"n": 1}), Step(1, "work", {"n": 2})],
            "step 1 (index 1): duplicate id 1",
        ),
        (
            [Step(2, "work", {"n": 1}), Step(1, "work", {"n": 2})],
            "step 1 (index 1): ids must increase, 1 follows 2",
        ),
        ([Step("1", "work", {"n": 1})], "step at index 0: id must be an int, got '1'"),  # type: ignore[arg-type]
        (["work(1)"], "step at index 0: expected a Step or a dict, got str"),
        ([{"tool_name": "work"}], "step at index 0: missing id"),
        (
            [Step(1, "work", {"n": 1, "m": 1})],
            "step 1 (index 0): tool 'work': got an unexpected keyword argument 'm'",
        ),
        ([Step(1, "work", {})], "step 1 (index 0): tool 'work': missing a required argument: 'n'"),
        ([Step(1, "gather", {"calls": []})], "step 1 (index 0): a gather step needs args="),
        (
            [Step.gather(1, [("teleport", {})])],
            "step 1 (index 0): gather call 0: unknown tool 'teleport'",
        ),
        (
            [Step(1, "gather", {"calls": [{"tool_name": "gather", "args": {}}]})],
            "gather steps cannot be nested",
        ),
    ],
)
def test_a_malformed_plan_is_a_replannable_error(log: CallLog, bad_plan: Any, message: str) -> None:
    errors: list[str | None] = []

    def planner(goal: str, history: list[Step], last_error: str | None) -> Any:
        errors.append(last_error)
        return bad_plan if len(errors) == 1 else GOOD

    session = PlanExecuteAgent(planner, log.tools()).run("g")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert session.replans == 1
    assert errors[0] is None
    assert errors[1] is not None and message in errors[1]
    [error_event] = [e for e in session.events if e["type"] == "error"]
    assert error_event["source"] == "planner" and message in error_event["error"]
    assert log.names() == ["work"]  # nothing of the bad plan ran


def test_all_problems_of_a_plan_are_reported_at_once() -> None:
    tools = {"work": Tool(lambda n: n, name="work")}
    with pytest.raises(TFPlanError) as caught:
        validate_plan([Step(1, "nope"), Step(1, "work", {"n": 1}), 3], tools)
    message = str(caught.value)
    assert "step 1 (index 0): unknown tool 'nope' (known tools: work)" in message
    assert "step 1 (index 1): duplicate id 1" in message
    assert "step at index 2: expected a Step or a dict, got int" in message


def test_a_planner_that_keeps_returning_garbage_uses_up_the_replans(log: CallLog) -> None:
    session = PlanExecuteAgent(lambda goal, history, error: "not a plan", log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "replan_budget")
    assert session.replans == 5 and log.calls == []
    assert session.error == "the plan must be a list of steps, got str"


def test_step_dicts_are_accepted_and_copied(log: CallLog) -> None:
    plan: list[Any] = [{"id": 1, "tool_name": "work", "args": {"n": 7}, "expected_outcome": "done"}]
    session = PlanExecuteAgent(lambda goal, history, error: plan, log.tools()).run("g")
    assert session.status == "completed"
    assert session.history[0].expected_outcome == "done"
    assert plan[0] == {"id": 1, "tool_name": "work", "args": {"n": 7}, "expected_outcome": "done"}


def test_the_planners_steps_are_not_mutated(log: CallLog) -> None:
    plan = [Step(1, "work", {"n": 1})]
    PlanExecuteAgent(lambda goal, history, error: plan, log.tools()).run("g")
    assert plan == [Step(1, "work", {"n": 1})]


def test_a_planner_that_raises_ends_the_session_with_a_record(log: CallLog) -> None:
    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        raise KeyError("model config")

    session = PlanExecuteAgent(planner, log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "fatal_error")
    assert session.error == "planner raised KeyError: 'model config'"
    assert session.events[-1]["type"] == "final"


def test_a_planner_may_raise_a_plan_error_to_ask_for_another_try(log: CallLog) -> None:
    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        if last_error is None:
            raise TFPlanError("could not parse the model's plan")
        return GOOD

    session = PlanExecuteAgent(planner, log.tools()).run("g")
    assert session.status == "completed" and session.replans == 1
