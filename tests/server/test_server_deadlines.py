"""A served run never stays ``running`` on a hung tool past its plan's time limit."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.memory import Memory
from dcbrain.tfplan import Limits
from support.brain_scripts import plan, verdict
from support.deadline import outcome_within
from support.server_app import BrainScripts, ServeFn

LIMIT_S = 2.0


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    released = threading.Event()
    yield released
    released.set()


def hung_tool_brain(memory: Memory | None, gate: threading.Event, *, timeout_s: float,
                    replies: list[str]) -> DCBrain:
    entered = threading.Event()

    def lookup(query: str) -> str:
        """Look something up (answers only when the test lets it)."""
        entered.set()
        gate.wait(60)
        return "late"

    return DCBrain(default_llm=ScriptedLLM(replies),
                   default_validate_llm=ScriptedLLM([verdict(True)]), tools=[lookup],
                   memory=memory, limits=Limits(timeout_s=timeout_s))


def tool_events(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e.get("status", "")) for e in events
            if e["type"].startswith("call_") and e["kind"] == "tool"]


def test_a_hung_tool_ends_the_attempt_and_the_run_goes_on(
    serve: ServeFn, brains: BrainScripts, gate: threading.Event
) -> None:
    replies = [plan("return lookup(query='x')"), plan("return 'gave up'")]
    brains.then(lambda memory: hung_tool_brain(memory, gate, timeout_s=LIMIT_S, replies=replies))
    with serve() as api:
        run_id = api.send("c1", "look it up")
        run, error = outcome_within(LIMIT_S + 8.0, lambda: api.wait_for(run_id))
        assert error is None, error
        events = api.stream(run_id).events
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", "gave up")
    assert tool_events(events) == [("call_started", ""), ("call_abandoned", ""),
                                   ("call_finished", "error")]
    finished = [e for e in events if e["type"] == "plan_finished"]
    assert finished[0]["error_kind"] == "TimeLimitExceeded"


def test_abort_abandons_a_hung_sync_tool(
    serve: ServeFn, brains: BrainScripts, gate: threading.Event
) -> None:
    replies = [plan("return lookup(query='x')")]
    brains.then(lambda memory: hung_tool_brain(memory, gate, timeout_s=300, replies=replies))
    with serve() as api:
        run_id = api.send("c1", "look it up")
        api.stream(run_id, until=lambda e: e["type"] == "call_started" and e["kind"] == "tool")
        api.http.post(f"/v1/runs/{run_id}/abort", json={})
        run, error = outcome_within(10.0, lambda: api.wait_for(run_id))
        assert error is None, error
        events = api.stream(run_id).events
    assert (run["status"], run["reason"]) == ("aborted", "aborted")
    assert tool_events(events) == [("call_started", ""), ("call_abandoned", ""),
                                   ("call_finished", "aborted")]
