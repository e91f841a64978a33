"""The seed's five exercises: replan budget, step budget, plan diff, cache, gather."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from dcbrain.agent import PlanDiff, PlanExecuteAgent, Step
from dcbrain.events import (
    AgentRunStarted,
    Event,
    StepCallFinished,
    StepCallStarted,
    parse_event,
)
from support.call_log import CallLog


def test_same_bad_plan_five_times_is_caught_by_max_replans(log: CallLog) -> None:
    log.fail["flaky"] = "still broken"
    errors: list[str | None] = []

    def stubborn(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        errors.append(last_error)
        return [Step(1, "flaky", {"n": 1}, "it works this time")]

    session = PlanExecuteAgent(stubborn, log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "replan_budget")
    assert len(errors) == 6  # the first plan and five replans; the sixth replan is refused
    assert errors[1:] == ["step 1 (flaky) failed: RuntimeError: still broken"] * 5
    assert session.steps_executed == 6
    # Every revision is visible, even when nothing changed.
    assert len(session.revisions) == 5
    assert all(diff.is_empty and diff.unchanged == [1] for diff in session.revisions)


def test_max_replans_zero_means_the_first_failure_ends_the_session(log: CallLog) -> None:
    log.fail["flaky"] = "broken"
    planner_calls: list[str | None] = []

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        planner_calls.append(last_error)
        return [Step(1, "flaky")]

    session = PlanExecuteAgent(planner, log.tools(), max_replans=0).run("g")
    assert (session.status, session.reason) == ("failed", "replan_budget")
    assert planner_calls == [None]


def growing_planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
    """Each replan's plan is three steps longer: 1, 4, 7, ... steps; the last one fails."""
    revision = sum(1 for step in history if step.status == "failed")
    size = 1 + 3 * revision
    steps = [Step(i, "work", {"n": 100 * revision + i}) for i in range(1, size)]
    return [*steps, Step(size, "flaky", {"n": revision})]


def test_plans_growing_three_steps_per_replan_hit_max_steps_at_the_12th_execution(
    log: CallLog,
) -> None:
    log.fail["flaky"] = "nope"
    session = PlanExecuteAgent(growing_planner, log.tools()).run("g")
    assert (session.status, session.reason) == ("failed", "step_budget")
    assert session.steps_executed == 12 and len(log.calls) == 12
    assert session.replans == 2  # replans were left (max 5): the step budget refused the third
    assert session.history[-1].tool_name == "flaky" and session.history[-1].status == "failed"
    assert [event["type"] for event in session.events][-3:] == ["budget", "state_changed", "final"]


def test_the_same_planner_replans_a_third_time_when_steps_are_left(log: CallLog) -> None:
    log.fail["flaky"] = "nope"
    session = PlanExecuteAgent(growing_planner, log.tools(), max_steps=13).run("g")
    assert session.replans == 3
    assert session.reason == "step_budget"  # the fourth plan (10 steps) does not fit either


def test_a_constructed_diff_has_the_right_removed_added_and_revised() -> None:
    old = [
        Step(1, "search", {"q": "x"}),
        Step(2, "fetch", {"url": "u"}),
        Step(3, "summarize", {"text": "t"}),
        Step(4, "write", {"title": "x"}),
    ]
    new = [
        Step(2, "fetch_mirror", {"url": "u"}),  # tool changed
        Step(3, "summarize", {"text": "t", "short": True}),  # args changed
        Step(5, "notify", {"to": "ops"}, "the team knows"),
    ]
    diff = PlanDiff.compute(old, new, done_ids={1}, revision=1, reason="fetch failed")
    assert diff.removed == [4]
    assert diff.added == [5]
    assert diff.revised == [2, 3]
    assert diff.done == [1] and diff.unchanged == []
    assert not diff.is_empty


def test_a_replan_through_the_agent_reports_all_three_kinds_of_change(log: CallLog) -> None:
    log.fail["flaky"] = "boom"

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        if last_error is None:
            return [
                Step(1, "work", {"n": 1}),
                Step(2, "flaky"),
                Step(3, "work", {"n": 3}),
                Step(4, "work", {"n": 4}),
            ]
        return [Step(2, "awork", {"n": 2}), Step(3, "work", {"n": 3}), Step(5, "work", {"n": 5})]

    session = PlanExecuteAgent(planner, log.tools()).run("g")
    assert session.status == "completed"
    [diff] = session.revisions
    assert (diff.removed, diff.added, diff.revised) == ([4], [5], [2])
    assert (diff.unchanged, diff.done) == ([3], [1])
    assert diff.reason == "step 2 (flaky) failed: RuntimeError: boom"


def test_cache_reuses_steps_that_already_succeeded(log: CallLog) -> None:
    log.fail["flaky"] = "boom"

    def replanner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        # Like an LLM that rewrites the whole plan: the first three steps come back unchanged.
        done = [Step(i, "work", {"n": i}) for i in (1, 2, 3)]
        if last_error is None:
            return [*done, Step(4, "flaky"), Step(5, "work", {"n": 5}), Step(6, "work", {"n": 6})]
        return [*done, Step(7, "awork", {"n": 4}), Step(8, "work", {"n": 5})]

    session = PlanExecuteAgent(replanner, log.tools()).run("g")
    assert session.status == "completed"
    assert log.calls == [
        ("work", {"n": 1}),
        ("work", {"n": 2}),
        ("work", {"n": 3}),
        ("flaky", {"n": 0}),
        ("awork", {"n": 4}),
        ("work", {"n": 5}),
    ]
    cached = [step for step in session.history if step.status == "cached"]
    assert [(step.id, step.revision, step.result) for step in cached] == [
        (1, 1, "work 1"),
        (2, 1, "work 2"),
        (3, 1, "work 3"),
    ]
    finished = [e for e in session.events if e["type"] == "step_finished" and e["cached"]]
    assert [(e["step_id"], e["status"], e["result"]) for e in finished] == [
        (1, "cached", "work 1"),
        (2, "cached", "work 2"),
        (3, "cached", "work 3"),
    ]
    assert session.steps_executed == 6  # cached steps are not executions


def test_cache_off_runs_every_step_again(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    calls = 0

    def replanner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        nonlocal calls
        calls += 1
        return [Step(1, "work", {"n": 1}), Step(2, "flaky" if calls == 1 else "awork", {"n": 2})]

    session = PlanExecuteAgent(replanner, log.tools(), cache=False).run("g")
    assert session.status == "completed"
    assert log.names() == ["work", "flaky", "work", "awork"]


def test_cache_does_not_skip_a_repeated_call_within_one_plan(log: CallLog) -> None:
    plan = [Step(1, "work", {"n": 1}), Step(2, "work", {"n": 1})]
    session = PlanExecuteAgent(lambda goal, history, error: plan, log.tools()).run("g")
    assert session.status == "completed"
    assert log.names() == ["work", "work"]


def test_cache_does_not_reuse_a_failed_call(log: CallLog) -> None:
    log.fail["flaky"] = "boom"

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        return [Step(1, "flaky")]

    PlanExecuteAgent(planner, log.tools(), max_replans=1).run("g")
    assert log.names() == ["flaky", "flaky"]


def test_gather_runs_two_async_calls_concurrently() -> None:
    in_flight = 0
    peak = 0
    both_started = asyncio.Event()

    async def probe(name: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 2:
            both_started.set()
        # Sequential calls would wait here forever: the guard turns that into a failure.
        await asyncio.wait_for(both_started.wait(), timeout=10)
        in_flight -= 1
        return f"probed {name}"

    plan = [Step.gather(1, [("probe", {"name": "a"}), ("probe", {"name": "b"})], "both probed")]
    agent = PlanExecuteAgent(lambda goal, history, error: plan, {"probe": probe}, max_replans=0)
    session = agent.run("g")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert peak == 2
    assert session.history[0].result == ["probed a", "probed b"]
    assert session.steps_executed == 1  # a gather step is one step execution


def test_gather_runs_sync_calls_concurrently_in_worker_threads() -> None:
    barrier = threading.Barrier(2, timeout=10)  # broken (an error) unless both calls overlap

    def meet(name: str) -> str:
        barrier.wait()
        return name

    plan = [
        Step(
            1,
            "gather",
            {
                "calls": [
                    {"tool_name": "meet", "args": {"name": "a"}},
                    {"tool_name": "meet", "args": {"name": "b"}},
                ]
            },
        )
    ]
    agent = PlanExecuteAgent(lambda goal, history, error: plan, {"meet": meet}, max_replans=0)
    session = agent.run("g")
    assert session.status == "completed", session.error
    assert session.history[0].result == ["a", "b"]


def test_gather_respects_the_concurrency_cap() -> None:
    in_flight = 0
    peak = 0

    async def slow(n: int) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        in_flight -= 1
        return n

    plan = [Step.gather(1, [("slow", {"n": n}) for n in range(6)])]
    agent = PlanExecuteAgent(lambda goal, history, error: plan, {"slow": slow}, max_concurrency=2)
    session = agent.run("g")
    assert session.history[0].result == [0, 1, 2, 3, 4, 5]
    assert peak == 2
    uncapped = PlanExecuteAgent(
        lambda goal, history, error: plan, {"slow": slow}, max_concurrency=6
    )
    peak = 0
    uncapped.run("g")
    assert peak == 6


def test_gather_emits_call_events_and_fails_as_one_step(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    plans: list[Any] = [
        [Step.gather(1, [("work", {"n": 1}), ("flaky", {"n": 2})])],
        [Step(2, "awork", {"n": 2})],
    ]
    session = PlanExecuteAgent(lambda goal, history, error: plans.pop(0), log.tools()).run("g")
    assert session.status == "completed"
    failed = session.history[0]
    assert failed.status == "failed" and failed.result == ["work 1", None]
    assert failed.error == "step 1 gather call 1 (flaky) failed: RuntimeError: boom"
    calls = [e for e in session.events if e["type"] in ("call_started", "call_finished")]
    assert sorted((e["type"], e["index"]) for e in calls) == [
        ("call_finished", 0),
        ("call_finished", 1),
        ("call_started", 0),
        ("call_started", 1),
    ]


def test_an_agent_run_emits_agent_event_classes(log: CallLog) -> None:
    seen: list[Event] = []
    plan = [Step(1, "work", {"n": 1}), Step.gather(2, [("work", {"n": 2}), ("work", {"n": 3})])]
    agent = PlanExecuteAgent(lambda goal, history, error: plan, log.tools(), on_event=seen.append)
    session = agent.run("g")
    assert session.status == "completed"
    started = seen[0].payload
    assert isinstance(started, AgentRunStarted)
    assert (started.goal, started.max_steps, started.max_replans) == ("g", 12, 5)
    calls = [event.payload for event in seen if event.type.startswith("call_")]
    assert [type(call) for call in calls].count(StepCallStarted) == 2
    finished = [call for call in calls if isinstance(call, StepCallFinished)]
    assert sorted((call.step_id, call.index, call.result) for call in finished) == [
        (2, 0, "work 2"), (2, 1, "work 3")]
    assert all(call.duration_s >= 0 and call.status == "ok" for call in finished)
    assert [parse_event(event.to_dict()) for event in seen] == seen
