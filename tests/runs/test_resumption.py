"""What a resumed run carries over, read from the stored events of earlier executions."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.events import (
    BrainRunStarted,
    Event,
    EventData,
    LLMCallFinished,
    LLMCallStarted,
    PlanCallFinished,
    PlanCallStarted,
    RunResumed,
)
from dcbrain.runs.resume import WORKER_LOST, resumption

START = BrainRunStarted(question="q", conversation_id="c1", chains=[], tools=["refund"],
                        max_iterations=3, max_tokens=1000, timeout=60.0)
PLAN_LLM = LLMCallStarted(call_id="llm-1", name="m", model="m", phase="plan",
                          prompt_tokens=100, max_output_tokens=50)
PLAN_LLM_END = LLMCallFinished(call_id="llm-1", name="m", model="m", phase="plan", status="ok",
                               duration_s=0.5, prompt_tokens=100, completion_tokens=20,
                               total_tokens=120)
REFUND = PlanCallStarted(call_id="call-1", kind="tool", name="refund",
                         args={"order_id": "A-1001"}, reused=False, line=2, col=4, path="")


def stored(*payloads: tuple[float, EventData]) -> list[dict[str, Any]]:
    return [Event(payload=payload, seq=seq, ts=ts, run_id="r1").to_dict()
            for seq, (ts, payload) in enumerate(payloads)]


def test_a_call_open_at_the_crash_is_closed_interrupted_as_its_producers_class() -> None:
    events = stored((100.0, START), (100.1, PLAN_LLM), (100.6, PLAN_LLM_END),
                    (100.7, REFUND))
    resumed = resumption(events, execution=2)
    assert (resumed.execution, resumed.reason, resumed.first_seq) == (2, WORKER_LOST, 4)
    [closed] = resumed.interrupted
    assert isinstance(closed, PlanCallFinished)
    assert (closed.call_id, closed.name, closed.status, closed.line, closed.col) == (
        "call-1", "refund", "interrupted", 2, 4)
    assert closed.error is not None and "runs again" in closed.error
    assert resumed.usage.total_tokens == 120
    assert resumed.duration_s == pytest.approx(0.7)


def test_a_second_resume_counts_every_earlier_execution_once() -> None:
    first = stored((100.0, START), (100.1, PLAN_LLM), (100.6, PLAN_LLM_END), (100.7, REFUND))
    closed = resumption(first, execution=2).interrupted[0]
    second_llm = PLAN_LLM.model_copy(update={"call_id": "llm-2"})
    second_llm_end = PLAN_LLM_END.model_copy(update={"call_id": "llm-2"})
    events = first + stored(
        (200.0, closed), (200.0, RunResumed(execution=2, reason=WORKER_LOST,
                                            earlier_duration_s=0.7)),
        (200.0, START), (200.2, second_llm), (201.0, second_llm_end), (202.0, REFUND),
    )
    for seq, event in enumerate(events):
        event["seq"] = seq
    resumed = resumption(events, execution=3)
    assert resumed.first_seq == len(events)
    # the refund left open by the first execution was closed; the second one's is open
    assert [call.call_id for call in resumed.interrupted] == ["call-1"]
    assert resumed.usage.total_tokens == 240
    assert resumed.duration_s == pytest.approx(0.7 + 2.0)
