"""Steps that use earlier results ($ref) and chains as the agent's tools."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from dcbrain import Chain, ScriptedLLM
from dcbrain.agent import LLMPlanner, PlanExecuteAgent, Step, validate_plan
from dcbrain.agent.refs import resolve_references
from dcbrain.exceptions import TFPlanError, TFReferenceError
from dcbrain.tools import Tool


def search(query: str) -> dict[str, Any]:
    """Search; returns hits."""
    return {"total": 2, "items": [{"url": f"https://a/{query}"}, {"url": "https://b"}]}


def fetch(url: str) -> str:
    """Fetch a page."""
    return f"text of {url}"


def add(a: int, b: int) -> int:
    return a + b


def scripted(*plans: list[Step]) -> Any:
    queue = list(plans)
    seen: list[str | None] = []

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        seen.append(last_error)
        return queue.pop(0) if queue else []

    planner.seen = seen  # type: ignore[attr-defined]
    return planner


def test_arguments_refer_to_earlier_results_by_path() -> None:
    planner = scripted([
        Step(1, "search", {"query": "mcp"}),
        Step(2, "fetch", {"url": {"$ref": "step-1.result.items[0].url"}}),
        Step(3, "add", {"a": {"$ref": "step-1.result.total"},
                        "b": {"$ref": "step-1.result.items.1.url"}}),
    ])
    session = PlanExecuteAgent(planner, [search, fetch, add]).run("g")
    assert session.history[1].result == "text of https://a/mcp"
    # the step as written keeps its reference; step 3 fails on a str for an int
    assert session.history[1].args == {"url": {"$ref": "step-1.result.items[0].url"}}
    assert session.history[2].status == "failed"
    assert "argument 'b'" in (session.history[2].error or "")


def test_refs_inside_lists_and_gather_calls_resolve() -> None:
    planner = scripted([
        Step(1, "search", {"query": "x"}),
        Step.gather(2, [("fetch", {"url": {"$ref": "step-1.result.items[1].url"}}),
                        ("add", {"a": {"$ref": "step-1.result.total"}, "b": 40})]),
    ])
    session = PlanExecuteAgent(planner, [search, fetch, add]).run("g")
    assert session.ok
    assert session.history[1].result == ["text of https://b", 42]


def test_a_bad_reference_is_a_replannable_error_naming_the_step_and_path() -> None:
    planner = scripted(
        [Step(1, "search", {"query": "x"}),
         Step(2, "fetch", {"url": {"$ref": "step-1.result.hits"}})],
        [Step(3, "fetch", {"url": {"$ref": "step-1.result.items[5].url"}})],
        [Step(4, "fetch", {"url": {"$ref": "step-2.result"}})],
    )
    session = PlanExecuteAgent(planner, [search, fetch]).run("g")
    assert session.reason == "no_plan"
    errors = planner.seen[1:]
    assert errors[0] == ("step 2 (fetch) failed: reference 'step-1.result.hits': "
                         "step-1.result has no key 'hits' (keys: total, items)")
    assert errors[1] == ("step 3 (fetch) failed: reference 'step-1.result.items[5].url': "
                         "step-1.result.items is a list of 2 items: index 5 is out of range")
    assert errors[2] == ("step 4 (fetch) failed: reference 'step-2.result': step 2 has no "
                         "result (steps with results: 1)")


def test_malformed_and_forward_references_are_rejected_before_running() -> None:
    tools = {"fetch": Tool(fetch)}
    with pytest.raises(TFPlanError) as caught:
        validate_plan([
            Step(1, "fetch", {"url": {"$ref": "step-2.result"}}),
            Step(2, "fetch", {"url": {"$ref": "result of step 1"}}),
            Step(3, "fetch", {"url": {"$ref": "step-3.result"}}),
        ], tools)
    message = str(caught.value)
    assert "step 1 (index 0): reference 'step-2.result' points at a later step" in message
    assert "step 2 (index 1): malformed reference 'result of step 1'" in message
    assert "step 3 (index 2): reference 'step-3.result' points at the step itself" in message


def test_resolve_references_leaves_other_dicts_alone() -> None:
    args = {"q": {"$ref": "step-1.result", "other": 1}, "n": [{"$ref": "step-1.result[0]"}]}
    assert resolve_references(args, {1: [7]}) == {"q": {"$ref": "step-1.result", "other": 1},
                                                   "n": [7]}
    with pytest.raises(TFReferenceError, match="is int, which has no part 'x'"):
        resolve_references({"$ref": "step-1.result.x"}, {1: 3})


def test_the_cache_compares_resolved_arguments() -> None:
    calls: list[int] = []

    def count(n: int) -> int:
        calls.append(n)
        return n

    def boom() -> None:
        raise RuntimeError("boom")

    planner = scripted(
        [Step(1, "count", {"n": 1}), Step(2, "count", {"n": {"$ref": "step-1.result"}}),
         Step(3, "boom")],
        [Step(1, "count", {"n": 1}), Step(2, "count", {"n": {"$ref": "step-1.result"}})],
    )
    session = PlanExecuteAgent(planner, [count, boom]).run("g")
    assert session.ok and calls == [1, 1]
    assert [step.status for step in session.history[-2:]] == ["cached", "cached"]


class Summary(BaseModel):
    title: str
    words: int


def test_chains_are_tools_of_the_agent() -> None:
    llm = ScriptedLLM([{"title": "MCP", "words": 3}])
    summarize = Chain(name="summarize", llm=llm, description="Summarize a text",
                      prompt="Summarize: {{ text }}", output_type=Summary)
    planner = scripted([
        Step(1, "fetch", {"url": "https://a"}),
        Step(2, "summarize", {"text": {"$ref": "step-1.result"}}),
        Step(3, "add", {"a": {"$ref": "step-2.result.words"}, "b": 1}),
    ])
    session = PlanExecuteAgent(planner, [fetch, summarize, add]).run("g")
    assert session.ok, session.error
    assert session.history[1].result == {"title": "MCP", "words": 3}
    assert session.history[2].result == 4
    assert llm.calls[0][-1]["content"] == "Summarize: text of https://a"


def test_a_chain_tool_missing_its_argument_is_a_plan_error() -> None:
    chain = Chain(name="summarize", llm=ScriptedLLM([]), prompt="Summarize: {{ text }}")
    with pytest.raises(TFPlanError, match="missing a required argument: 'text'"):
        validate_plan([Step(1, "summarize", {})], {"summarize": chain.as_tool()})


def test_the_llm_planner_is_told_about_references() -> None:
    llm = ScriptedLLM([{"steps": [
        {"id": 1, "tool_name": "search", "args": {"query": "x"}, "expected_outcome": "hits"},
        {"id": 2, "tool_name": "fetch", "args": {"url": {"$ref": "step-1.result.items[0].url"}},
         "expected_outcome": "text"},
    ]}])
    session = PlanExecuteAgent(LLMPlanner(llm), [search, fetch]).run("read the top hit")
    assert session.history[-1].result == "text of https://a/x"
    request = llm.requests[0]
    assert '"$ref": "step-<id>.result"' in request.messages[0]["content"]
    assert request.json_schema is not None
    args_schema = request.json_schema["properties"]["steps"]["items"]["properties"]["args"]
    assert "$ref" in args_schema["description"]


def test_absurdly_nested_arguments_are_a_plan_error_not_a_crash() -> None:
    nested: Any = "x"
    for _ in range(5000):
        nested = [nested]
    with pytest.raises(TFPlanError, match=r"step 1 \(index 0\): arguments nested deeper "
                                          "than 100 levels"):
        validate_plan([Step(1, "fetch", {"url": nested})], {"fetch": Tool(fetch)})
    with pytest.raises(TFReferenceError, match="nested deeper"):
        resolve_references({"a": nested}, {})


def test_a_dict_key_renames_a_chain_tool() -> None:
    llm = ScriptedLLM(["short"])
    chain = Chain(name="summarize", llm=llm, description="Summarize", prompt="S: {{ text }}")
    planner = scripted([Step(1, "brief", {"text": {"k": [1, 2]}})])
    session = PlanExecuteAgent(planner, {"brief": chain}).run("g")
    assert session.ok and session.history[0].result == "short"
    assert llm.calls[0][-1]["content"] == 'S: {"k": [1, 2]}'
    assert chain.as_tool().name == "summarize"
