"""Typed events: every kind is a class, documented field by field, and stays JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.events import (
    EVENT_CLASSES,
    AgentRunStarted,
    BrainRunStarted,
    CallFinished,
    CallStarted,
    ErrorEvent,
    Event,
    EventLog,
    EventType,
    Final,
    LLMCallFinished,
    LLMCallStarted,
    PlanCallFinished,
    PlanCallStarted,
    StepCallStarted,
    clip,
    event_classes,
    event_json_schemas,
    parse_event,
    parse_payload,
    to_json_value,
)
from dcbrain.events.docs import events_reference, generated_part
from support.brain_scripts import add, plan, verdict

DOCS = Path(__file__).resolve().parents[1] / "docs" / "events.md"


def test_the_docs_list_every_event_class_as_the_classes_say() -> None:
    # regenerate with: python -m dcbrain.events.docs docs/events.md
    assert generated_part(DOCS.read_text(encoding="utf-8")) == events_reference()
    for cls in EVENT_CLASSES:
        assert f"`{cls.__name__}`" in events_reference()


def test_every_event_type_has_a_class_and_every_class_a_type() -> None:
    assert {cls.type for cls in EVENT_CLASSES} == {str(kind) for kind in EventType}
    assert event_classes("run_started") == (BrainRunStarted, AgentRunStarted)
    assert event_classes("no_such_type") == ()


def test_every_event_has_a_json_schema() -> None:
    schemas = event_json_schemas()
    assert set(schemas) == {str(kind) for kind in EventType}
    assert schemas["error"]["required"] == ["source", "error"]
    finished = schemas["call_finished"]["anyOf"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in finished] == [
        "PlanCallFinished", "LLMCallFinished", "StepCallFinished"]
    plan_call = schemas["call_finished"]["$defs"]["PlanCallFinished"]
    assert plan_call["properties"]["status"]["enum"] == ["ok", "error", "aborted", "interrupted"]
    assert plan_call["properties"]["kind"]["enum"] == ["chain", "tool", "construct_chain"]


PLAN_CALL = {"call_id": "call-1", "kind": "tool", "name": "add", "args": {"a": 1},
             "reused": False, "line": 1, "col": 0, "path": ""}


@pytest.mark.parametrize("missing", ["line", "col", "path", "reused", "args"])
def test_a_plan_call_start_without_one_of_its_facts_is_refused(missing: str) -> None:
    with pytest.raises(ValidationError, match=missing):
        PlanCallStarted(**{key: value for key, value in PLAN_CALL.items() if key != missing})


def test_each_producer_has_its_own_required_fields() -> None:
    with pytest.raises(ValidationError, match="prompt_tokens"):
        LLMCallStarted(call_id="llm-1", name="m", model="m", phase="plan",
                       max_output_tokens=10)
    with pytest.raises(ValidationError, match="phase"):
        LLMCallStarted(call_id="llm-1", name="m", model="m", phase="thinking",
                       prompt_tokens=1, max_output_tokens=10)
    with pytest.raises(ValidationError, match="step_id"):
        StepCallStarted(call_id="s", name="search", args={}, revision=0, index=0)
    with pytest.raises(ValidationError, match="kind"):
        PlanCallStarted(**{**PLAN_CALL, "kind": "llm"})
    with pytest.raises(ValidationError, match="question"):
        BrainRunStarted(conversation_id="c", chains=[], tools=[], max_iterations=1,
                        max_tokens=1, timeout=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="goal"):
        AgentRunStarted(tools=[], max_steps=1, max_replans=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="goal"):  # a brain run has no goal
        BrainRunStarted(question="q", conversation_id="c", chains=[], tools=[],
                        max_iterations=1, max_tokens=1, timeout=1.0, goal="g")


def test_the_call_bases_are_not_events_of_their_own() -> None:
    with pytest.raises(TypeError, match="abstract"):
        CallStarted(call_id="c", kind="tool", name="t")  # type: ignore[abstract]
    with pytest.raises(TypeError, match="PlanCallFinished"):
        CallFinished(call_id="c", kind="tool", name="t", status="ok", duration_s=0.0)


def test_a_started_call_closes_as_the_finished_call_of_its_producer() -> None:
    started = PlanCallStarted(**{**PLAN_CALL, "branch": 1, "path": "0.1"})
    closed = started.closed("aborted", "the run stopped (aborted)", 0.5)
    assert isinstance(closed, PlanCallFinished)
    assert (closed.call_id, closed.line, closed.path, closed.branch, closed.status) == (
        "call-1", 1, "0.1", 1, "aborted")
    llm = LLMCallStarted(call_id="llm-1", name="m", model="m", phase="run", prompt_tokens=7,
                         max_output_tokens=10).closed("error", "boom", 0.1)
    assert isinstance(llm, LLMCallFinished)
    assert (llm.prompt_tokens, llm.total_tokens, llm.phase) == (7, 0, "run")


def test_the_json_form_of_every_event_of_a_run_parses_back_to_its_class() -> None:
    brain = DCBrain(default_llm=ScriptedLLM([plan("return add(a=1, b=2)")]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])
    seen: list[Event] = []
    brain.subscribe(seen.append)
    result = brain.run("q", conversation_id="c1")
    assert [event.to_dict() for event in seen] == result.events
    for event in seen:
        assert parse_event(event.to_dict()) == event
    classes = [type(event.payload) for event in seen]
    assert classes[0] is BrainRunStarted and classes[-1] is Final
    assert {PlanCallStarted, PlanCallFinished, LLMCallStarted, LLMCallFinished} <= set(classes)
    with pytest.raises(ValueError, match="fits no event class"):
        parse_payload({"type": "call_started", "call_id": "c", "kind": "tool", "name": "t"})
    with pytest.raises(ValueError, match="unknown event type 'nope'"):
        parse_payload({"type": "nope"})


def test_values_stay_json_values_and_large_ones_are_marked_truncated() -> None:
    assert clip({"amount": 39.9, "items": (1, 2)}) == {"amount": 39.9, "items": [1, 2]}
    assert clip({3, 1, 2}) == [1, 2, 3]
    big = clip("x" * 5000, 100)
    assert big == {"truncated": True, "size": 5000, "preview": "x" * 100}
    assert clip(["y" * 30] * 10, 50)["size"] == len(json.dumps(["y" * 30] * 10))
    assert to_json_value(float("nan")) == "nan"
    assert to_json_value("\ud800") == "\ufffd"  # always encodable


def test_values_json_cannot_hold_become_strings_and_never_raise() -> None:
    big = 10**5000
    value = {big: [big, -big, float("inf"), float("-inf")], "\ud800key": {"\udc00"},
             (1, 2): None, 7: 10**4299}
    assert to_json_value(value) == {
        hex(big): [hex(big), hex(-big), "inf", "-inf"], "\ufffdkey": ["\ufffd"],
        "(1, 2)": None, "7": 10**4299,  # an int Python writes in decimal stays a number
    }
    clipped = clip([big])
    assert clipped["truncated"] and clipped["preview"].startswith('["0x')
    json.dumps(to_json_value(value), allow_nan=False).encode("utf-8")


def test_a_run_sends_no_number_as_a_string() -> None:
    def refund(order_id: str, amount: float) -> dict[str, object]:
        """Refund an order."""
        return {"amount": amount, "ok": True}

    brain = DCBrain(default_llm=ScriptedLLM([plan('return refund(order_id="A", amount=39.9)')]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[refund])
    result = brain.run("q", conversation_id="c1")
    started = next(e for e in result.events if e["type"] == "call_started" and
                   e["name"] == "refund")
    finished = next(e for e in result.events if e["type"] == "call_finished" and
                    e["name"] == "refund")
    assert started["args"] == {"order_id": "A", "amount": 39.9}
    assert finished["result"] == {"amount": 39.9, "ok": True} and finished["status"] == "ok"
    plan_finished = next(e for e in result.events if e["type"] == "plan_finished")
    assert plan_finished["result"] == {"amount": 39.9, "ok": True}
    budget = next(e for e in result.events if e["type"] == "budget")
    assert isinstance(budget["tokens_used"], int)
    for event in result.events:
        assert json.loads(json.dumps(event)) == event
        assert parse_event(event).to_dict() == event


def test_a_sealed_log_drops_late_events() -> None:
    log = EventLog("r1")
    seen: list[Event] = []
    log.subscribe(seen.append)
    log.emit(ErrorEvent(source="brain", error="first"))
    log.seal()
    assert log.emit(ErrorEvent(source="brain", error="late")) is None
    assert [event.seq for event in seen] == [0] and seen[0].run_id == "r1"
