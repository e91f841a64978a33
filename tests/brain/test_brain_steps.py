"""The lifecycle's steps one at a time: each step's ``run`` returns the step that comes
next (or the end), and announces the state it enters."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.brain import BrainRun
from dcbrain.brain.steps import (
    Abort,
    AwaitApprovals,
    End,
    Execute,
    Fail,
    Init,
    Plan,
    Succeed,
    Validate,
    drive,
)
from dcbrain.exceptions import RunSuspended, TFTokenBudgetExceeded
from dcbrain.tools import Tool
from support.brain_scripts import add, plan, verdict


def pay(recipient: str, amount: int) -> str:
    """Send ``amount`` to ``recipient``."""
    return f"sent {amount} to {recipient}"


def new_run(plans: list[Any], verdicts: list[Any] | None = None, **options: Any) -> BrainRun:
    run_options = {key: options.pop(key) for key in ("wait_for_approvals",) if key in options}
    brain = DCBrain(default_llm=ScriptedLLM(plans),
                    default_validate_llm=ScriptedLLM(verdicts or []),
                    tools=[add, Tool(pay, requires_approval=True)], isolation="inprocess",
                    **options)
    return BrainRun(brain, "q", "c1", **run_options)


def moves(run: BrainRun) -> list[tuple[str, str, str]]:
    return [(event["source"], event["dest"], event["trigger"])
            for event in run.recorder.as_dicts() if event["type"] == "state_changed"]


async def planned(run: BrainRun) -> Any:
    assert await Init().run(run) == Plan()
    return await Plan().run(run)


async def test_init_describes_the_callables_and_leads_to_planning() -> None:
    run = new_run([])
    assert await Init().run(run) == Plan()
    assert moves(run) == [("init", "init", "init")]
    assert "add" in str(run.planning.template_vars())


async def test_a_direct_answer_goes_to_validation_which_ends_the_run() -> None:
    run = new_run(["forty-two"])
    assert await planned(run) == Validate()
    assert await Validate().run(run) == Succeed("direct_answer")
    assert await Succeed("direct_answer").run(run) == End("succeeded", "direct_answer")
    assert (run.ir.status, run.ir.reason, run.ir.final_result) == (
        "succeeded", "direct_answer", "forty-two")
    assert moves(run)[-2:] == [("init", "planning", "plan"),
                               ("planning", "succeeded", "succeed")]


async def test_a_plan_goes_to_execution_then_validation() -> None:
    run = new_run([plan("return add(a=1, b=2)")], [verdict(True)])
    assert await planned(run) == Execute()
    assert await Execute().run(run) == Validate()
    assert run.ir.current_result is not None and run.ir.current_result.value == 3
    assert await Validate().run(run) == Succeed("validated")
    assert moves(run)[-1] == ("planning", "running", "exec_plan")


async def test_an_empty_reply_plans_again_and_a_failing_plan_is_a_failed_attempt() -> None:
    run = new_run(["", plan("return add(a=1)")])
    assert await planned(run) == Plan()
    assert await Plan().run(run) == Execute()
    assert await Execute().run(run) == Validate()  # the plan's error is the attempt's
    assert run.ir.interpreter_err is not None
    assert await Validate().run(run) == Plan()  # no verdict on an error: plan again
    assert run.attempts.of("c1")[-1]["plan"] == "return add(a=1)"


async def test_a_rejected_result_plans_again_with_the_suggestion() -> None:
    run = new_run([plan("return add(a=1, b=2)")], [verdict(False, "add 3 too")])
    assert await planned(run) == Execute()
    assert await Execute().run(run) == Validate()
    assert await Validate().run(run) == Plan()
    assert run.ir.suggestion == "add 3 too" and run.ir.status is None


async def test_the_iteration_budget_is_a_returned_stop_that_fails_the_run() -> None:
    run = new_run([], max_iterations=1)
    await Init().run(run)
    run.ir.iterations = 1
    step = await Plan().run(run)
    assert isinstance(step, Fail) and step.reason == "max_iterations"
    assert step.budget is not None and (step.budget.used, step.budget.limit) == (1, 1)
    assert run.state == "init" and run.ir.reason is None  # nothing happened yet
    run.state = "planning"
    assert await step.run(run) == End("failed", "max_iterations")
    budget = [e for e in run.recorder.as_dicts() if e["type"] == "budget"]
    assert budget[-1]["exhausted"] is True and moves(run)[-1] == ("planning", "failed", "fail")


async def test_a_stop_outside_planning_and_running_aborts() -> None:
    run = new_run([])
    assert await Fail("error").run(run) == Abort("error")
    assert await drive(run, Abort("error")) == End("aborted", "error")
    assert (run.ir.status, run.state) == ("aborted", "aborted")


async def test_a_call_needing_approval_waits_and_a_handler_decision_runs_the_plan_on() -> None:
    run = new_run([plan('return pay(recipient="alice", amount=5)')], [verdict(True)],
                  on_approval=lambda request: True)
    assert await planned(run) == Execute()
    step = await Execute().run(run)
    assert isinstance(step, AwaitApprovals) and [r.tool for r in step.requests] == ["pay"]
    assert await step.run(run) == Execute(resumed=True)  # decided at once: no waiting
    assert await Execute(resumed=True).run(run) == Validate()
    assert run.ir.current_result is not None
    assert run.ir.current_result.value == "sent 5 to alice"
    assert moves(run)[-1] == ("planning", "running", "exec_plan")


async def test_a_run_told_not_to_wait_suspends_in_state_waiting() -> None:
    run = new_run([plan('return pay(recipient="alice", amount=5)')], wait_for_approvals=False)
    assert await planned(run) == Execute()
    step = await Execute().run(run)
    assert isinstance(step, AwaitApprovals)
    with pytest.raises(RunSuspended):
        await step.run(run)
    assert run.state == "waiting" and [r.tool for r in run.suspended] == ["pay"]
    assert moves(run)[-1] == ("running", "waiting", "wait")


async def test_a_replan_with_plan_goes_back_to_planning_without_a_verdict() -> None:
    run = new_run([plan("return replan_with(add(a=1, b=2))")])
    assert await planned(run) == Execute()
    assert await Execute().run(run) == Validate()
    assert await Validate().run(run) == Plan()
    assert run.ir.replanning and run.ir.suggestions == []


async def test_a_failed_plan_written_again_is_refused_once_then_ends_the_run() -> None:
    failing = plan("return add(a=1)")
    run = new_run([failing, failing, failing])
    assert await planned(run) == Execute()
    assert await Execute().run(run) == Validate()
    assert await Validate().run(run) == Plan()
    assert await Plan().run(run) == Plan()  # refused: the next planning is told
    assert await Plan().run(run) == Fail("repeated_plan")
    assert await Fail("repeated_plan").run(run) == End("failed", "repeated_plan")


async def test_a_token_budget_spent_by_a_plan_is_a_returned_stop() -> None:
    run = new_run([plan("return add(a=1, b=2)")])
    assert await planned(run) == Execute()
    run.budget.exhausted = TFTokenBudgetExceeded("spent", requested=10, used=5, limit=10)
    assert await Execute().run(run) == Fail("max_tokens")  # no validation
    step = await Plan().run(run)  # a planning would only be refused
    assert isinstance(step, Fail) and step.reason == "max_tokens"
    assert step.error == "TFTokenBudgetExceeded: spent"
