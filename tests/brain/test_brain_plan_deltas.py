"""Streamed LLM text in a run: `plan_delta` from a streaming plan LLM, `chain_delta` from
a chain whose LLM streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dcbrain import OpenAILLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.text_deltas import PlanDeltas
from dcbrain.events import EventData, PlanDelta, parse_payload
from dcbrain.llm import StreamingScriptedLLM
from dcbrain.llm.fake_server import ScriptedOpenAIServer
from support.brain_scripts import add, event_types, plan, verdict

FIRST = "x = add(a=1, b=2)\nreturn x"
SECOND = "x = add(a=1, b=3)\ny = add(a=x, b=1)\nreturn y"


def written(events: list[dict[str, Any]], iteration: int) -> str:
    """The reply put together from one planning's deltas, checking that they follow on."""
    text = ""
    for event in events:
        if event["type"] == "plan_delta" and event["iteration"] == iteration:
            if event["offset"] == 0:
                text = ""
            assert event["offset"] == len(text), "a delta that does not follow on"
            text += event["text"]
    return text


def test_a_streaming_planner_shows_each_plan_as_it_is_written_before_the_whole_plan() -> None:
    planner = StreamingScriptedLLM([plan(FIRST), plan(SECOND)])
    validator = ScriptedLLM([verdict(False, "use b=3 and add one"), verdict(True)])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator, tools=[add])
    result = brain.run("q")
    assert result.final_result == 5
    events = result.events
    types = event_types(events)
    assert written(events, 1) == plan(FIRST)
    assert written(events, 2) == plan(SECOND)
    last_delta = max(i for i, kind in enumerate(types) if kind == "plan_delta"
                     and events[i]["iteration"] == 1)
    assert types.index("plan_delta") > types.index("run_started")
    assert last_delta < types.index("plan_created")
    revised = types.index("plan_revised")
    assert types[revised - 1] == "plan_delta"  # the second plan's text, then the plan
    created = events[types.index("plan_created")]
    assert created["plan"] == FIRST  # still the whole plan
    for event in events:
        if event["type"] == "plan_delta":
            assert isinstance(parse_payload(event), PlanDelta)


def test_a_planner_that_does_not_stream_sends_no_deltas() -> None:
    brain = DCBrain(default_llm=ScriptedLLM([plan(FIRST)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])
    result = brain.run("q")
    assert result.final_result == 3
    assert "plan_delta" not in event_types(result.events)


def test_the_validator_and_chains_are_not_shown_as_plan_text() -> None:
    validator = StreamingScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=StreamingScriptedLLM([plan(FIRST)]),
                    default_validate_llm=validator, tools=[add])
    result = brain.run("q")
    assert written(result.events, 1) == plan(FIRST)
    assert all(e["iteration"] == 1 for e in result.events if e["type"] == "plan_delta")
    assert "is_solved" not in json.dumps([e for e in result.events
                                          if e["type"] == "plan_delta"])


def test_streamed_and_unstreamed_plannings_cost_the_same_tokens() -> None:
    def run(planner: ScriptedLLM) -> Any:
        brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                        tools=[add])
        return brain.run("q")

    streamed, plain = run(StreamingScriptedLLM([plan(FIRST)])), run(ScriptedLLM([plan(FIRST)]))
    assert streamed.usage.total_tokens == plain.usage.total_tokens > 0


def test_plan_deltas_go_in_the_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    brain = DCBrain(default_llm=StreamingScriptedLLM([plan(FIRST)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add],
                    trace_path=trace)
    brain.run("q")
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert written(lines, 1) == plan(FIRST)


def test_a_plan_llm_over_http_streams_its_plan_into_the_run() -> None:
    replies = [plan(FIRST), json.dumps(verdict(True))]
    with ScriptedOpenAIServer(replies, tokens_per_second=400) as server:
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0)
        result = DCBrain(default_llm=llm, tools=[add]).run("q")
        planning, validation = server.requests
    assert result.final_result == 3
    assert planning["stream"] is True
    assert "stream" not in validation  # only the planner's text is listened for
    assert written(result.events, 1) == plan(FIRST)
    llm_calls = [e for e in result.events if e["type"] == "call_finished"
                 and e["kind"] == "llm"]
    assert llm_calls[0]["phase"] == "plan"
    assert llm_calls[0]["completion_tokens"] > 0


# -- coalescing --------------------------------------------------------------------------


def collect() -> tuple[list[PlanDelta], Any]:
    sent: list[PlanDelta] = []

    def emit(payload: EventData) -> None:
        assert isinstance(payload, PlanDelta)
        sent.append(payload)

    return sent, emit


def test_chunks_within_the_interval_go_out_together() -> None:
    sent, emit = collect()
    deltas = PlanDeltas(emit, 1, interval_s=3600.0)  # nothing is due again during the test
    take = deltas.open_reply()
    for piece in ["ret", "urn", " 1", "\n"]:
        take(piece)
    assert [(d.offset, d.text) for d in sent] == [(0, "ret")]  # the first at once
    deltas.close()
    assert [(d.offset, d.text) for d in sent] == [(0, "ret"), (3, "urn 1\n")]
    take("late")
    assert len(sent) == 2  # nothing after the planning ended


def test_a_new_reply_sends_the_rest_of_the_last_and_starts_at_offset_0() -> None:
    sent, emit = collect()
    deltas = PlanDeltas(emit, 2, interval_s=3600.0)
    first = deltas.open_reply()
    first("a")
    first("b")
    second = deltas.open_reply()
    second("c")
    deltas.close()
    assert [(d.iteration, d.offset, d.text) for d in sent] == [
        (2, 0, "a"), (2, 1, "b"), (2, 0, "c")]


def test_without_an_interval_every_chunk_is_an_event() -> None:
    sent, emit = collect()
    deltas = PlanDeltas(emit, 1, interval_s=0.0)
    take = deltas.open_reply()
    for piece in ["x", " =", " 1"]:
        take(piece)
    assert [d.text for d in sent] == ["x", " =", " 1"]


async def test_an_abort_while_the_plan_is_written_stops_the_stream() -> None:
    import asyncio

    from dcbrain.events import Event

    written_once = asyncio.Event()

    def on_event(event: Event) -> None:
        if isinstance(event.payload, PlanDelta):
            written_once.set()

    with ScriptedOpenAIServer([plan(FIRST)], tokens_per_second=2) as server:
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0)
        brain = DCBrain(default_llm=llm, tools=[add])
        run = asyncio.create_task(brain.async_run("q", on_event=on_event))
        await written_once.wait()
        assert brain.abort() is True
        result = await run
    assert (result.status, result.reason) == ("aborted", "aborted")
    types = event_types(result.events)
    assert "plan_delta" in types and "plan_created" not in types
    (planner_call,) = [e for e in result.events if e["type"] == "call_finished"]
    assert planner_call["status"] == "aborted"


def test_a_chain_whose_llm_streams_shows_its_output_as_it_is_written() -> None:
    from dcbrain import Chain

    summary = "Lisbon in three nights: the old town, the river and the coast."
    summarize = Chain(name="summarize", description="Summarize a text",
                      llm=StreamingScriptedLLM([summary]), prompt="Summarize: {{ text }}")
    brain = DCBrain(spec_chains={"summarize": summarize},
                    default_llm=ScriptedLLM([plan("return summarize(text='a trip')")]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])
    result = brain.run("q")
    assert result.final_result == summary
    events = result.events
    (started,) = [e for e in events if e["type"] == "call_started" and e["kind"] == "chain"]
    (finished,) = [e for e in events if e["type"] == "call_finished" and e["kind"] == "chain"]
    deltas = [e for e in events if e["type"] == "chain_delta"]
    assert len(deltas) >= 2
    assert {(d["call_id"], d["name"]) for d in deltas} == {(started["call_id"], "summarize")}
    assert "".join(d["text"] for d in deltas) == summary
    assert all(started["seq"] < d["seq"] < finished["seq"] for d in deltas)
    assert "plan_delta" not in event_types(events)  # the planner did not stream
