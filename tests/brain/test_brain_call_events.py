"""Chain and tool calls of a plan as events: when they are announced, their ids and kinds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dcbrain import Chain, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.events import Event
from dcbrain.exceptions import TFUserNewInputError
from dcbrain.tfplan import Limits
from support.brain_scripts import add, brain_with_input_during_its_plan, plan, verdict


def plan_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"].startswith("call_") and e["kind"] != "llm"]


def test_a_chain_call_superseded_by_new_input_is_never_announced() -> None:
    brain = brain_with_input_during_its_plan()
    seen: list[Event] = []
    brain.subscribe(seen.append)
    with pytest.raises(TFUserNewInputError):
        brain.run("q", conversation_id="c1")
    calls = [(e["type"], e["name"], e.get("error"))
             for e in plan_calls([event.to_dict() for event in seen])]
    assert calls == [("call_started", "user_writes", None),
                     ("call_finished", "user_writes", None)]


def test_call_ids_are_unique_across_the_plans_of_a_run() -> None:
    summarize = Chain(name="summarize", llm=ScriptedLLM(["short"]), prompt="{{ text }}")
    planner = ScriptedLLM([plan("x = add(a=1, b=2)\nreturn summarize(text='old')"),
                           plan("x = add(a=1, b=3)\nreturn add(a=x, b=1)")])
    validator = ScriptedLLM([verdict(False, "again"), verdict(True)])
    brain = DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                    default_validate_llm=validator, tools=[add])
    result = brain.run("q", conversation_id="c1")
    started = [e["call_id"] for e in plan_calls(result.events) if e["type"] == "call_started"]
    finished = [e["call_id"] for e in plan_calls(result.events) if e["type"] == "call_finished"]
    assert len(started) == 4 and len(set(started)) == 4
    assert sorted(finished) == sorted(started)


def test_calls_of_a_constructed_chain_are_chain_calls() -> None:
    planner = ScriptedLLM([plan("city = __construct_chain(tags=['city'])\n"
                                "return city(input='where?')")])
    brain = DCBrain(default_plan_llm=planner, default_llm=ScriptedLLM(["Paris"]),
                    default_validate_llm=ScriptedLLM([verdict(True)]))
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == "Paris"
    kinds = [(e["type"], e["kind"], e["name"]) for e in plan_calls(result.events)]
    assert kinds == [("call_started", "construct_chain", "__construct_chain"),
                     ("call_finished", "construct_chain", "__construct_chain"),
                     ("call_started", "chain", "constructed_chain_1"),
                     ("call_finished", "chain", "constructed_chain_1")]


def big(n: int) -> str:
    """A result of about 1 MiB."""
    return "é" * 900_000


def echo(**fields: str) -> int:
    """Counts the fields it is given."""
    return len(fields)


def test_a_call_with_many_big_arguments_is_announced_with_a_bounded_preview() -> None:
    arguments = ", ".join(f"f{i}='{'x' * 400}'" for i in range(300))
    planner = ScriptedLLM([plan(f"return echo({arguments})")])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[echo])
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == 300
    started = next(e for e in plan_calls(result.events) if e["type"] == "call_started")
    assert len(json.dumps(started["args"])) < 10_000, "every argument kept in the event"
    assert started["args"]["f0"] == "x" * 400
    assert started["args"]["..."] == {"truncated": True,
                                      "omitted": 300 - len(started["args"]) + 1}


def test_a_big_plan_value_is_clipped_in_the_final_event_and_whole_on_the_result() -> None:
    planner = ScriptedLLM([plan("return [str(i) for i in range(100000)]")])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(False)]),
                    max_iterations=1)
    result = brain.run("q", conversation_id="c1")
    assert len(result.last_result) == 100_000
    final = result.events[-1]
    assert final["type"] == "final" and final["last_result"]["truncated"] is True
    assert len(json.dumps(result.events)) < 100_000


def test_a_plan_past_the_host_budget_fails_cleanly_and_the_run_goes_on() -> None:
    planner = ScriptedLLM([plan("return parallel(" + ", ".join(
        f"big(n={i})" for i in range(12)) + ")"), plan("return add(a=1, b=2)")])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[big, add], limits=Limits(max_host_mb=4))
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == 3
    failed = next(e for e in result.events if e["type"] == "plan_finished")
    assert (failed["ok"], failed["error_kind"]) == (False, "SizeLimitExceeded")
    assert "max_host_mb" in failed["error"]
    assert len(json.dumps(result.events)) < 200_000
