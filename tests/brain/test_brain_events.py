"""Events: live (astream, subscribe), on the result, as a JSONL trace and as spans."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dcbrain import Chain, FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.events import Event, LLMCallFinished, parse_payload
from support.brain_scripts import add, event_types, plan, verdict

FIRST = "x = add(a=1, b=2)\ns = summarize(text='old')\nreturn x"
SECOND = "x = add(a=1, b=3)\ny = add(a=x, b=1)\nreturn y"


def replanning_brain(**kwargs: object) -> DCBrain:
    summarize = Chain(name="summarize", llm=ScriptedLLM(["short"]), prompt="{{ text }}")
    planner = ScriptedLLM([plan(FIRST), plan(SECOND)])
    validator = ScriptedLLM([verdict(False, "use b=3 and add one"), verdict(True)])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   default_validate_llm=validator, tools=[add], **kwargs)  # type: ignore[arg-type]


def test_a_revised_plan_carries_a_text_and_a_call_level_diff() -> None:
    result = replanning_brain().run("q", conversation_id="c1")
    created = [e for e in result.events if e["type"] == "plan_created"]
    [revised] = [e for e in result.events if e["type"] == "plan_revised"]
    assert created[0]["plan"] == FIRST and [c["name"] for c in created[0]["calls"]] == [
        "add", "summarize"
    ]
    assert revised["previous_plan"] == FIRST and revised["plan"] == SECOND
    assert revised["reason"] == "use b=3 and add one"
    diff = revised["diff"]
    assert "-x = add(a=1, b=2)\n" in diff["unified"] and "+x = add(a=1, b=3)\n" in diff["unified"]
    assert diff["revised"] == [
        {"old": {"id": "add#1", "name": "add", "args": {"a": "1", "b": "2"}, "line": 1},
         "new": {"id": "add#1", "name": "add", "args": {"a": "1", "b": "3"}, "line": 1}}]
    assert diff["removed"] == [
        {"id": "summarize#1", "name": "summarize", "args": {"text": "'old'"}, "line": 2}]
    assert diff["added"] == [
        {"id": "add#2", "name": "add", "args": {"a": "x", "b": "1"}, "line": 2}]
    assert "~ add(a=1, b=2) -> add(a=1, b=3)" in revised["summary"]


def test_the_event_stream_tells_the_whole_story_in_order() -> None:
    result = replanning_brain().run("q", conversation_id="c1")
    types = event_types(result.events)
    assert types[0] == "run_started" and types[-1] == "final"
    assert [e["seq"] for e in result.events] == list(range(len(types)))
    states = [e["dest"] for e in result.events if e["type"] == "state_changed"]
    assert states == ["init", "planning", "running", "planning", "running", "succeeded"]
    calls = [(e["type"], e["kind"], e["name"]) for e in result.events
             if e["type"].startswith("call_") and e["kind"] != "llm"]
    assert calls[:4] == [("call_started", "tool", "add"), ("call_finished", "tool", "add"),
                         ("call_started", "chain", "summarize"),
                         ("call_finished", "chain", "summarize")]
    llm = [e for e in result.events if e["type"] == "call_finished" and e["kind"] == "llm"]
    assert [e["phase"] for e in llm] == ["plan", "run", "validate", "plan", "validate"]
    assert all(e["prompt_tokens"] > 0 and e["duration_s"] >= 0 for e in llm)
    budgets = [e for e in result.events if e["type"] == "budget"]
    assert len(budgets) == 5 and budgets[-1]["tokens_used"] == result.usage.total_tokens
    assert budgets[-1]["tokens_left"] == 128_000 - result.usage.total_tokens
    verdicts = [(e["is_solved"], e["suggestion"]) for e in result.events
                if e["type"] == "validation"]
    assert verdicts == [(False, "use b=3 and add one"), (True, "")]
    final = result.events[-1]
    assert final["status"] == "succeeded" and final["final_result"] == 5
    assert "events" not in final


def test_subscribers_get_event_objects_live() -> None:
    brain = replanning_brain()
    seen: list[Event] = []
    unsubscribe = brain.subscribe(seen.append)
    result = brain.run("q", conversation_id="c1")
    assert [e.to_dict() for e in seen] == result.events
    unsubscribe()
    assert brain.subscribe(lambda e: 1 / 0) is not None  # a failing subscriber is harmless


async def test_astream_yields_every_event_and_ends_with_final() -> None:
    brain = replanning_brain()
    events = [event async for event in brain.astream("q", conversation_id="c1")]
    assert isinstance(events[0], Event)
    assert events[0].type == "run_started" and events[-1].type == "final"
    assert events[-1].data["final_result"] == 5
    assert [e.seq for e in events] == list(range(len(events)))


def test_jsonl_trace_has_one_line_per_event(tmp_path: Path) -> None:
    path = tmp_path / "traces" / "brain.jsonl"
    result = replanning_brain(trace_path=path).run("q", conversation_id="c1")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines == json.loads(json.dumps(result.events))


def test_spans_follow_genai_conventions(spans: InMemorySpanExporter) -> None:
    result = replanning_brain().run("q", conversation_id="c1")
    finished = spans.get_finished_spans()
    [run] = [s for s in finished if s.name == "dcbrain.brain.run"]
    assert run.attributes is not None
    assert run.attributes["dcbrain.status"] == "succeeded"
    assert run.attributes["dcbrain.run_id"] == result.run_id
    chats = [s for s in finished if s.name == "chat scripted"]
    assert len(chats) == 5
    for span in chats:
        assert span.attributes is not None
        assert span.attributes["gen_ai.request.model"] == "scripted"
        assert span.attributes["gen_ai.usage.input_tokens"] > 0
        assert "gen_ai.usage.output_tokens" in span.attributes
    total = sum(s.attributes["gen_ai.usage.input_tokens"]  # type: ignore[index]
                + s.attributes["gen_ai.usage.output_tokens"] for s in chats)  # type: ignore[index]
    assert total == result.usage.total_tokens
    phases = [s for s in finished if s.name in ("dcbrain.brain.planning", "dcbrain.brain.running")]
    assert len(phases) == 4
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in phases)
    tools = [s for s in finished if s.name == "tool add"]
    assert tools and all(s.parent is not None and s.parent.span_id in
                         {p.context.span_id for p in phases} for s in tools)


async def test_an_llm_call_the_run_outlived_is_closed_under_its_own_name(tmp_path: Path) -> None:
    """A plan's sync tool may call an LLM in the plan's thread; when the run stops first,
    the call's closing event still names its model and phase, as its start did."""
    brain: DCBrain
    asked, release = threading.Event(), threading.Event()

    def consult() -> str:
        """Ask the expert model."""
        return str(expert.chat([{"role": "user", "content": "help"}]).content)

    def expert_reply(messages: list[dict[str, Any]]) -> str:
        asked.set()
        release.wait(60)
        return "late"

    expert = FunctionLLM(expert_reply, model="expert-1")
    trace = tmp_path / "trace.jsonl"
    brain = DCBrain(default_llm=ScriptedLLM([plan("return consult()")]), tools=[consult],
                    trace_path=trace)
    run = asyncio.create_task(brain.async_run("q", conversation_id="c1"))
    await asyncio.to_thread(asked.wait, 60)
    brain.abort()
    result = await run
    release.set()
    assert result.status == "aborted"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    [started] = [e for e in events if e["type"] == "call_started" and e["name"] == "expert-1"]
    [finished] = [e for e in events if e["type"] == "call_finished"
                  and e["call_id"] == started["call_id"]]
    assert (finished["kind"], finished["model"], finished["phase"], finished["status"]) == (
        "llm", "expert-1", "run", "aborted")
    assert {key: finished[key] for key in ("name", "prompt_tokens")} == {
        key: started[key] for key in ("name", "prompt_tokens")}
    assert isinstance(parse_payload(finished), LLMCallFinished)
    [tool] = [e for e in events if e["type"] == "call_finished" and e["name"] == "consult"]
    assert (tool["kind"], tool["status"], tool["line"], tool["col"]) == ("tool", "aborted", 1, 8)
