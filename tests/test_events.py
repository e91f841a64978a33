"""Typed events: every kind is a class, documented field by field, and stays JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.events import (
    EVENT_CLASSES,
    CallFinished,
    Event,
    EventLog,
    EventType,
    clip,
    event_json_schemas,
    to_json_value,
)
from support.brain_scripts import plan, verdict

DOCS = Path(__file__).resolve().parents[1] / "docs" / "events.md"


def documented_fields() -> dict[str, list[str]]:
    """Each ``### `type` `` section of docs/events.md and the fields of its table."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in DOCS.read_text().splitlines():
        heading = re.match(r"### `(\w+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
            continue
        row = re.match(r"\| `(\w+)` \|", line)
        if row and current is not None:
            current.append(row.group(1))
        elif line.startswith("### "):
            current = None
    return sections


def test_every_event_type_has_one_class() -> None:
    assert set(EVENT_CLASSES) == {str(kind) for kind in EventType}


@pytest.mark.parametrize("name", sorted(EVENT_CLASSES))
def test_the_docs_list_every_field_of_every_event(name: str) -> None:
    assert documented_fields()[name] == list(EVENT_CLASSES[name].model_fields)


def test_every_event_has_a_json_schema() -> None:
    schemas = event_json_schemas()
    assert set(schemas) == set(EVENT_CLASSES)
    assert schemas["call_finished"]["properties"]["status"]["enum"] == [
        "ok", "error", "aborted", "interrupted"]


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
        assert EVENT_CLASSES[event["type"]].model_validate(
            {k: v for k, v in event.items() if k not in ("type", "seq", "ts", "run_id")})


def test_a_sealed_log_drops_late_events() -> None:
    log = EventLog("r1")
    seen: list[Event] = []
    log.subscribe(seen.append)
    log.emit(CallFinished(call_id="c", kind="tool", name="t", status="ok"))
    log.seal()
    assert log.emit(CallFinished(call_id="d", kind="tool", name="t", status="ok")) is None
    assert [event.seq for event in seen] == [0] and seen[0].run_id == "r1"
