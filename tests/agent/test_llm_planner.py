"""LLMPlanner: the planner function computed by a chat LLM with structured output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dcbrain.agent import PLAN_JSON_SCHEMA, LLMPlanner, PlanExecuteAgent, Step
from dcbrain.exceptions import TFPlanError
from dcbrain.llm import FunctionLLM, LLMReply, ScriptedLLM, ToolCall
from support.call_log import CallLog


def plan(*steps: tuple[int, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "steps": [
            {"id": i, "tool_name": name, "args": args, "expected_outcome": f"{name} done"}
            for i, name, args in steps
        ]
    }


def test_the_llm_plans_and_replans_with_the_error(log: CallLog) -> None:
    log.fail["flaky"] = "disk full"
    llm = ScriptedLLM(
        [
            plan((1, "work", {"n": 1}), (2, "flaky", {"n": 2})),
            plan((1, "work", {"n": 1}), (3, "awork", {"n": 2})),
        ]
    )
    session = PlanExecuteAgent(LLMPlanner(llm), log.tools()).run("tidy the disk")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert log.calls == [("work", {"n": 1}), ("flaky", {"n": 2}), ("awork", {"n": 2})]
    assert session.history[2].status == "cached"  # step 1 came back unchanged
    first, second = llm.requests
    assert first.json_schema == PLAN_JSON_SCHEMA
    assert [m["role"] for m in first.messages] == ["system", "user"]
    prompt = first.messages[1]["content"]
    assert "Goal: tidy the disk" in prompt
    assert "Last error: none (first plan)" in prompt
    tools_text = prompt.split("Tools:\n", 1)[1].split("\n\nExecuted steps", 1)[0]
    catalogue = {tool["name"]: tool for tool in json.loads(tools_text)}
    assert sorted(catalogue) == ["awork", "flaky", "work"]
    assert catalogue["awork"]["description"] == "Do a unit of work, asynchronously."
    assert catalogue["work"]["parameters"]["properties"]["n"]["type"] == "integer"
    assert catalogue["work"]["parameters"]["required"] == ["n"]
    replan_prompt = second.messages[1]["content"]
    assert "Last error: step 2 (flaky) failed: RuntimeError: disk full" in replan_prompt
    assert '"error": "step 2 (flaky) failed: RuntimeError: disk full"' in replan_prompt
    assert '"status": "succeeded"' in replan_prompt


@pytest.mark.parametrize(
    ("bad_reply", "message"),
    [
        ("I think you should search first.", "the planner LLM did not return JSON: 'I think"),
        ({"plan": "search"}, 'the planner LLM must return {"steps": [...]}'),
        ({"steps": [{"id": 1, "tool_name": "teleport", "args": {}}]}, "unknown tool 'teleport'"),
        (
            {"steps": [{"id": 1, "tool_name": "work", "args": "n=1"}]},
            "args must be a dict, got str",
        ),
        ({"steps": [{"tool_name": "work", "args": {"n": 1}}]}, "step at index 0: missing id"),
        (ToolCall("c1", "work", {"n": 1}), "called a tool instead of returning a plan"),
        (LLMReply(content='{"steps": [', finish_reason="length"), "cut off by max_tokens"),
    ],
)
def test_malformed_llm_output_is_a_replannable_error(
    log: CallLog, bad_reply: Any, message: str
) -> None:
    llm = ScriptedLLM([bad_reply, plan((1, "work", {"n": 1}))])
    session = PlanExecuteAgent(LLMPlanner(llm), log.tools()).run("g")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert session.replans == 1
    second_prompt = llm.requests[1].messages[1]["content"]
    assert message in second_prompt  # the LLM is told what was wrong
    assert log.names() == ["work"]


def test_a_fenced_json_reply_is_accepted(log: CallLog) -> None:
    fenced = "```json\n" + json.dumps(plan((1, "work", {"n": 5}))) + "\n```"
    llm = FunctionLLM(lambda messages: fenced)
    session = PlanExecuteAgent(LLMPlanner(llm), log.tools()).run("g")
    assert session.status == "completed" and log.calls == [("work", {"n": 5})]


def test_gather_steps_come_through_the_llm(log: CallLog) -> None:
    reply = {
        "steps": [
            {
                "id": 1,
                "tool_name": "gather",
                "expected_outcome": "both",
                "args": {
                    "calls": [
                        {"tool_name": "work", "args": {"n": 1}},
                        {"tool_name": "awork", "args": {"n": 2}},
                    ]
                },
            }
        ]
    }
    session = PlanExecuteAgent(LLMPlanner(ScriptedLLM([reply])), log.tools()).run("g")
    assert session.history[0].result == ["work 1", "awork 2"]


def test_an_empty_plan_from_the_llm_means_no_plan(log: CallLog) -> None:
    session = PlanExecuteAgent(LLMPlanner(ScriptedLLM([{"steps": []}])), log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "no_plan")


def test_an_llm_that_keeps_failing_uses_up_the_replan_budget(log: CallLog) -> None:
    llm = FunctionLLM(lambda messages: "no idea")
    session = PlanExecuteAgent(LLMPlanner(llm), log.tools(), max_replans=2).run("g")
    assert (session.status, session.reason) == ("failed", "replan_budget")
    assert len(llm.calls) == 3


def test_a_provider_failure_ends_the_session_with_a_record(log: CallLog) -> None:
    llm = ScriptedLLM([ConnectionError("provider down")])
    session = PlanExecuteAgent(LLMPlanner(llm), log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "fatal_error")
    assert session.error == "planner raised ConnectionError: provider down"


async def test_the_planner_can_be_used_on_its_own_with_its_own_tools(log: CallLog) -> None:
    planner = LLMPlanner(ScriptedLLM([plan((1, "work", {"n": 1}))]), tools=log.tools())
    steps = await planner("g", [], None)
    assert steps == [Step(1, "work", {"n": 1}, "work done")]
    with pytest.raises(TFPlanError, match="did not return JSON"):
        await LLMPlanner(FunctionLLM(lambda m: "?"), tools=log.tools())("g", [], None)


async def test_a_planner_without_tools_says_how_to_give_it_some() -> None:
    with pytest.raises(RuntimeError, match="LLMPlanner has no tools"):
        await LLMPlanner(ScriptedLLM([]))("g", [], None)


def test_long_results_are_cut_in_the_prompt(log: CallLog) -> None:
    planner = LLMPlanner(ScriptedLLM([]), tools=log.tools(), max_result_chars=10)
    history = [Step(1, "work", {"n": 1}, result="x" * 500, status="succeeded")]
    content = planner.messages("g", history, "boom")[1]["content"]
    assert '"result": "\\"xxxxxxxxx…"' in content
    assert "x" * 20 not in content
