"""Test planners get the typed planning context: a test knows it is replanning, and
what failed, without reading the prompt."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.brain.planning import PlanningContext
from dcbrain.llm.testing import FunctionPlanner, ScriptedPlanner, tf_plan
from support.brain_scripts import verdict


def lookup(key: str) -> str:
    """Look a key up."""
    return {"a": "alpha"}.get(key, "")


def test_a_function_planner_sees_the_attempt_the_failures_and_the_journal() -> None:
    def planner(ctx: PlanningContext) -> str:
        if ctx.attempt == 1:
            return tf_plan('x = lookup(key="a")\nreturn x[99]')  # fails at run time
        failure = ctx.contextual_plan_info[-1]
        assert "IndexError" in failure["error"]
        assert ctx.succeeded_calls == ['lookup(key="a") -> alpha']
        return tf_plan('return lookup(key="a").upper()')

    planning = FunctionPlanner(planner)
    brain = DCBrain(planner=planning, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[lookup])
    result = brain.run("What is a?", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "ALPHA")
    assert [ctx.attempt for ctx in planning.contexts] == [1, 2]
    assert [ctx.question for ctx in planning.contexts] == ["What is a?"] * 2
    assert result.usage.total_tokens > 0  # the validator's; the planner spends none


async def test_a_scripted_planner_replies_in_order_and_sees_looked_up_values() -> None:
    seen: list[Any] = []

    def second(ctx: PlanningContext) -> str:
        seen.extend(item["value"] for item in ctx.looked_up)
        return "The answer is alpha."

    planning = ScriptedPlanner([tf_plan('return replan_with(lookup(key="a"))'), second])
    brain = DCBrain(planner=planning, default_validate_llm=ScriptedLLM([]), tools=[lookup])
    result = await brain.async_run("q", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "The answer is alpha.")
    assert seen == ["alpha"]


def test_a_scripted_planner_out_of_replies_names_the_planning() -> None:
    planning = ScriptedPlanner([tf_plan("return 1")])
    brain = DCBrain(planner=planning,
                    default_validate_llm=ScriptedLLM([verdict(False, "again")]))
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("aborted", "error")  # a bug in the test
    assert "ScriptedPlanner has no reply for planning #2 (1 scripted)" in (result.error or "")


async def test_a_planner_function_must_return_text() -> None:
    planning = FunctionPlanner(lambda ctx: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="must return the reply text"):
        await planning.plan(object())
