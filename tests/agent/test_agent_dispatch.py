"""Running steps: sync and async tools, failure policies, fatal errors, observers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from dcbrain.agent import Dispatcher, PlanExecuteAgent, Step
from dcbrain.events import Event
from dcbrain.exceptions import TFFatalStepError
from dcbrain.tools import Tool
from support.call_log import CallLog


def fixed(*steps: Step) -> Callable[[str, list[Step], str | None], list[Step]]:
    """A planner that always returns ``steps``."""
    return lambda goal, history, last_error: list(steps)


def test_sync_and_async_tools_run_in_plan_order(log: CallLog) -> None:
    plan = fixed(Step(1, "work", {"n": 1}), Step(2, "awork", {"n": 2}), Step(3, "work", {"n": 3}))
    session = PlanExecuteAgent(plan, log.tools()).run("g")
    assert session.status == "completed"
    assert log.calls == [("work", {"n": 1}), ("awork", {"n": 2}), ("work", {"n": 3})]
    assert [step.result for step in session.history] == ["work 1", "awork 2", "work 3"]


async def test_arun_works_inside_an_event_loop_and_run_does_too(log: CallLog) -> None:
    agent = PlanExecuteAgent(fixed(Step(1, "awork", {"n": 1})), log.tools())
    session = await agent.arun("g")
    assert session.status == "completed"
    assert agent.run("g").status == "completed"  # blocking form, from inside a running loop
    assert log.names() == ["awork", "awork"]


async def test_an_async_planner_is_awaited(log: CallLog) -> None:
    async def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        await asyncio.sleep(0)
        return [Step(1, "work", {"n": len(goal)})]

    session = await PlanExecuteAgent(planner, log.tools()).arun("four")
    assert log.calls == [("work", {"n": 4})] and session.status == "completed"


def test_abort_policy_stops_at_the_first_failure(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    plan = fixed(Step(1, "flaky"), Step(2, "work", {"n": 2}))
    session = PlanExecuteAgent(plan, log.tools(), failure_policy="abort").run("g")
    assert (session.status, session.reason) == ("failed", "aborted")
    assert session.error == "step 1 (flaky) failed: RuntimeError: boom"
    assert log.names() == ["flaky"] and session.replans == 0


def test_skip_policy_marks_the_step_failed_and_goes_on(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    plan = fixed(Step(1, "flaky"), Step(2, "work", {"n": 2}))
    session = PlanExecuteAgent(plan, log.tools(), failure_policy="skip").run("g")
    assert (session.status, session.reason) == ("completed", "goal_met")
    assert [(step.id, step.status) for step in session.history] == [(1, "failed"), (2, "succeeded")]
    assert session.replans == 0
    finished = [e for e in session.events if e["type"] == "step_finished"]
    assert (finished[0]["status"], finished[0]["policy"]) == ("failed", "skip")


def test_replan_is_the_default_policy(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    plans = [[Step(1, "flaky")], [Step(2, "work", {"n": 2})]]
    session = PlanExecuteAgent(lambda g, h, e: plans.pop(0), log.tools()).run("g")
    assert session.status == "completed" and session.replans == 1


def test_a_tool_policy_overrides_the_agents(log: CallLog) -> None:
    log.fail["flaky"] = "boom"
    log.fail["work"] = "also boom"
    plan = fixed(Step(1, "flaky"), Step(2, "work", {"n": 2}))
    agent = PlanExecuteAgent(
        plan, log.tools(), failure_policy="abort", tool_policies={"flaky": "skip"}
    )
    session = agent.run("g")
    assert (session.status, session.reason) == ("failed", "aborted")
    assert log.names() == ["flaky", "work"]
    assert session.error == "step 2 (work) failed: RuntimeError: also boom"


def test_a_fatal_tool_error_ends_the_session_whatever_the_policy(log: CallLog) -> None:
    def launch(code: str) -> str:
        raise TFFatalStepError("launch codes revoked")

    tools = {**log.tools(), "launch": launch}
    plan = fixed(Step(1, "launch", {"code": "x"}), Step(2, "work", {"n": 2}))
    for policy in ("replan", "skip", "abort"):
        session = PlanExecuteAgent(plan, tools, failure_policy=policy).run("g")  # type: ignore[arg-type]
        assert (session.status, session.reason) == ("failed", "fatal_error")
        assert session.error == "step 1 (launch) failed fatally: launch codes revoked"
    assert log.calls == []


def test_wrong_argument_types_and_non_data_results_are_replannable() -> None:
    def double(n: int) -> int:
        return 2 * n

    def opaque() -> object:
        return object()

    plans = [[Step(1, "double", {"n": "many"})], [Step(2, "opaque")], [Step(3, "double", {"n": 2})]]
    errors: list[str | None] = []

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        errors.append(last_error)
        return plans.pop(0)

    session = PlanExecuteAgent(planner, {"double": double, "opaque": opaque}).run("g")
    assert session.status == "completed" and session.history[-1].result == 4
    assert errors[1] is not None and errors[1].startswith("step 1 (double) failed: tool 'double'")
    assert "'n'" in errors[1]
    assert errors[2] == "step 2 (opaque) failed: tool 'opaque' result: object is not JSON-like data"


def test_on_event_sees_every_event_live_and_a_broken_observer_is_ignored(log: CallLog) -> None:
    seen: list[Event] = []

    def observer(event: Event) -> None:
        seen.append(event)
        if event.type == "step_started":
            raise RuntimeError("observer bug")

    agent = PlanExecuteAgent(fixed(Step(1, "work", {"n": 1})), log.tools(), on_event=observer)
    session = agent.run("g")
    assert session.status == "completed"
    assert [event.to_dict() for event in seen] == session.events


def test_one_agent_runs_sessions_concurrently_without_sharing_state(log: CallLog) -> None:
    async def both() -> list[str]:
        agent = PlanExecuteAgent(lambda g, h, e: [Step(1, "awork", {"n": len(g)})], log.tools())
        sessions = await asyncio.gather(agent.arun("a"), agent.arun("bb"))
        return [s.history[0].result for s in sessions]

    assert asyncio.run(both()) == ["awork 1", "awork 2"]


def test_tools_may_be_given_as_a_list_of_tools_or_functions(log: CallLog) -> None:
    tools = log.tools()
    agent = PlanExecuteAgent(
        fixed(Step(1, "work", {"n": 1}), Step(2, "renamed", {"n": 2})),
        [tools["work"], Tool(tools["awork"], name="renamed")],
    )
    assert sorted(agent.tools) == ["renamed", "work"]
    assert agent.run("g").status == "completed"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"failure_policy": "retry"}, "'retry' is not abort/skip/replan"),
        ({"tool_policies": {"nope": "skip"}}, "tool_policies name unknown tools: nope"),
        ({"max_concurrency": 0}, "max_concurrency must be at least 1"),
    ],
)
def test_bad_configuration_is_refused_up_front(
    log: CallLog, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Dispatcher(log.tools(), **options)  # type: ignore[arg-type]


def test_gather_is_a_reserved_tool_name() -> None:
    def gather() -> None:
        return None

    with pytest.raises(ValueError, match="reserved"):
        PlanExecuteAgent(fixed(), {"gather": gather})


@pytest.mark.parametrize("options", [{"max_steps": 0}, {"max_replans": -1}])
def test_budgets_must_make_sense(log: CallLog, options: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        PlanExecuteAgent(fixed(), log.tools(), **options)  # type: ignore[arg-type]


def test_a_tool_with_retries_is_tried_again_in_steps_and_gather_calls() -> None:
    failures = {"ping": [ConnectionError("reset")], "aping": [TimeoutError("slow")] * 2}

    def ping(host: str) -> str:
        """Ping a host."""
        if failures["ping"]:
            raise failures["ping"].pop()
        return f"pong {host}"

    async def aping(host: str) -> str:
        """Ping a host, asynchronously."""
        if failures["aping"]:
            raise failures["aping"].pop()
        return f"apong {host}"

    tools = [Tool(ping, retries=1, backoff=0), Tool(aping, retries=2, backoff=0)]
    gather = Step(2, "gather", {"calls": [{"tool_name": "aping", "args": {"host": "b"}}]})
    session = PlanExecuteAgent(fixed(Step(1, "ping", {"host": "a"}), gather), tools).run("g")
    assert session.status == "completed"
    assert [step.result for step in session.history] == ["pong a", ["apong b"]]
    retries = [(e["call_id"], e["name"], e["attempt"]) for e in session.events
               if e["type"] == "call_retry"]
    assert retries == [("step-0.1", "ping", 1), ("step-0.2.0", "aping", 1),
                       ("step-0.2.0", "aping", 2)]
