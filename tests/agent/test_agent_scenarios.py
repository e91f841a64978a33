"""The seed's scenarios, driven by its deterministic planner over the demo tools."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.agent import (
    DeterministicPlanner,
    PlanDiff,
    PlanExecuteAgent,
    SessionResult,
    Step,
    demo_tools,
)
from support.call_log import CallLog


def run(fail: dict[str, str] | None = None, **options: int) -> tuple[SessionResult, list[str]]:
    calls: list[str] = []
    agent = PlanExecuteAgent(DeterministicPlanner(), demo_tools(fail, log=calls), **options)
    return agent.run("rust async runtimes"), calls


def types(session: SessionResult) -> list[str]:
    return [event["type"] for event in session.events]


def test_linear_success_runs_the_four_step_plan() -> None:
    session, calls = run()
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert calls == ["search", "fetch", "summarize", "write_report"]
    assert [(step.id, step.status) for step in session.history] == [
        (1, "succeeded"),
        (2, "succeeded"),
        (3, "succeeded"),
        (4, "succeeded"),
    ]
    assert session.history[-1].result == {"title": "rust async runtimes", "status": "complete"}
    assert session.revisions == [] and session.replans == 0 and session.steps_executed == 4
    assert types(session).count("plan_created") == 1
    assert "plan_revised" not in types(session)
    assert types(session)[-1] == "final"


def test_failure_mid_plan_replans_once_from_the_cursor_with_the_error() -> None:
    seen: list[str | None] = []
    planner = DeterministicPlanner()

    def spying(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        seen.append(last_error)
        return planner(goal, history, last_error)

    calls: list[str] = []
    session = PlanExecuteAgent(spying, demo_tools({"fetch": "timeout"}, log=calls)).run("g")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert seen == [None, "step 2 (fetch) failed: RuntimeError: timeout"]
    # The first plan's search is not run again; the new plan continues without fetch.
    assert calls == ["search", "fetch", "summarize", "write_report"]
    assert session.replans == 1 and len(session.revisions) == 1
    assert [step.tool_name for step in session.plan] == ["search", "summarize", "write_report"]
    failed = session.history[1]
    assert (failed.id, failed.status, failed.error) == (2, "failed", seen[1])


def test_second_failure_replans_again_into_the_graceful_give_up() -> None:
    session, calls = run({"fetch": "timeout", "summarize": "quota exceeded"})
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert session.replans == 2
    assert calls[-2:] == ["write_report", "notify"]
    assert session.history[-2].result == {"title": "rust async runtimes", "status": "partial"}
    assert [diff.revision for diff in session.revisions] == [1, 2]


def test_an_error_the_planner_cannot_handle_ends_with_no_plan() -> None:
    session, calls = run({"fetch": "HTTP 404"})
    assert (session.status, session.reason) == ("failed", "no_plan")
    assert calls == ["search", "fetch"]
    assert session.error == "step 2 (fetch) failed: RuntimeError: HTTP 404"


def test_an_empty_first_plan_ends_with_no_plan() -> None:
    session = PlanExecuteAgent(lambda goal, history, error: [], demo_tools()).run("g")
    assert (session.status, session.reason) == ("failed", "no_plan")
    assert session.steps_executed == 0 and session.history == []


def test_replanning_exhausted_fails_with_replan_budget() -> None:
    session, calls = run({"fetch": "timeout", "summarize": "timeout"})
    assert (session.status, session.reason) == ("failed", "replan_budget")
    assert session.replans == 5 and len(session.revisions) == 5
    assert calls.count("summarize") == 5  # the avoiding plan, once per replan
    assert session.steps_executed < 12  # the replan budget, not the step budget, stopped it
    budget = [event for event in session.events if event["type"] == "budget"]
    assert budget[-1]["budget"] == "max_replans" and budget[-1]["used"] == 5


def test_step_budget_exhausted_stops_before_the_next_execution() -> None:
    session, calls = run({"fetch": "timeout"}, max_steps=3)
    assert (session.status, session.reason) == ("failed", "step_budget")
    assert calls == ["search", "fetch", "summarize"]
    assert session.steps_executed == 3


def test_a_linear_plan_longer_than_max_steps_runs_exactly_max_steps(log: CallLog) -> None:
    plan = [Step(i, "work", {"n": i}) for i in range(1, 14)]
    session = PlanExecuteAgent(lambda goal, history, error: plan, log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "step_budget")
    assert log.names() == ["work"] * 12
    assert session.steps_executed == 12


def test_plan_revised_event_carries_the_diff() -> None:
    session, _ = run({"fetch": "timeout"})
    [event] = [event for event in session.events if event["type"] == "plan_revised"]
    assert event["revision"] == 1
    assert event["reason"] == "step 2 (fetch) failed: RuntimeError: timeout"
    diff = event["diff"]  # the diff shape brain revisions use too: items with ids

    def ids(items: list[dict[str, Any]]) -> list[str]:
        return [item["id"] for item in items]

    assert (ids(diff["removed"]), ids(diff["added"])) == (["2"], [])
    assert [(item["old"]["id"], item["new"]["id"]) for item in diff["revised"]] == [("3", "3")]
    assert ids(diff["unchanged"]) == ["1", "4"]
    assert [step["id"] for step in event["steps"]] == [1, 3, 4]
    assert diff == session.revisions[0].to_data().model_dump(mode="json", exclude_none=True)
    restored = PlanDiff.from_dict(event)
    revision = session.revisions[0]
    assert (restored.removed, restored.added, restored.revised, restored.unchanged) == (
        revision.removed, revision.added, revision.revised, revision.unchanged)


def test_events_tell_the_story_in_order() -> None:
    session, _ = run({"fetch": "timeout"})
    assert types(session) == [
        "run_started",
        "state_changed",
        "plan_created",
        "state_changed",
        "step_started",
        "step_finished",  # search
        "step_started",
        "step_finished",  # fetch fails
        "state_changed",
        "plan_revised",
        "state_changed",
        "step_finished",  # search, from the cache
        "step_started",
        "step_finished",  # summarize
        "step_started",
        "step_finished",  # write_report
        "state_changed",
        "final",
    ]
    assert [event["seq"] for event in session.events] == list(range(len(session.events)))
    states = [(e["source"], e["dest"]) for e in session.events if e["type"] == "state_changed"]
    assert states == [
        ("idle", "planning"),
        ("planning", "executing"),
        ("executing", "replanning"),
        ("replanning", "executing"),
        ("executing", "completed"),
    ]
    started = [e for e in session.events if e["type"] == "step_started"]
    assert started[1]["expected_outcome"] == "the text of the best page"
    final = session.events[-1]
    assert (final["status"], final["reason"], final["steps_executed"]) == (
        "completed",
        "goal_met",
        4,
    )


@pytest.mark.parametrize(
    ("fail", "status", "reason"),
    [
        (None, "completed", "goal_met"),
        ({"fetch": "timeout"}, "completed", "goal_met"),
        ({"fetch": "timeout", "summarize": "quota"}, "completed", "goal_met"),
        ({"fetch": "timeout", "summarize": "timeout"}, "failed", "replan_budget"),
        ({"fetch": "disk full"}, "failed", "no_plan"),
    ],
)
def test_session_result_matches_its_final_event(
    fail: dict[str, str] | None, status: str, reason: str
) -> None:
    session, _ = run(fail)
    assert (session.status, session.reason) == (status, reason)
    final = session.events[-1]
    assert (final["type"], final["status"], final["reason"]) == ("final", status, reason)
    assert session.to_dict()["reason"] == reason
