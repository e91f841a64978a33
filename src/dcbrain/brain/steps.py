"""The brain lifecycle as steps: each step does one phase of a run and returns the next.

A step is a small value with ``async def run(run) -> next step | End``; the run drives
them one after the other (:func:`drive`) until one returns :class:`End`. Every stop is a
return value: a spent budget is ``Fail(reason, budget=...)``, a repeated plan
``Fail("repeated_plan")``; only an abort, new user input and a suspension for approvals
arrive as exceptions (they come from outside the step that is running)::

    Init ─▶ Plan ─┬─▶ Execute ─┬─▶ Validate ─┬─▶ Succeed ─▶ End
             ▲    │     ▲      │             │
             │    │     │      └─▶ AwaitApprovals (waiting, then running again)
             │    ├─▶ Validate (a direct answer; a plan that could not run)
             │    ├─▶ Plan (an unusable reply)
             └────┴──────────────────────────┘ (rejected, failed, replan_with)
    Plan, Execute ─▶ Fail(reason) ─▶ End       any stop ─▶ Abort(reason) ─▶ End

The seed's states (``init``, ``planning``, ``running``, ``waiting``, ``succeeded``,
``failed``, ``aborted``) are what the run announces: a step that enters one calls
:meth:`BrainRun.move <dcbrain.brain.run.BrainRun.move>` with its trigger, which
:data:`MOVES` allows only from the states of the seed's diagram, and a
``state_changed`` event goes out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from dcbrain.approvals import ApprovalBoard, ApprovalRequest, with_plan
from dcbrain.brain.base import answer_text
from dcbrain.brain.context import BrainReason, BrainStatus
from dcbrain.brain.eager import eager_planning
from dcbrain.brain.output import accept_output
from dcbrain.brain.planning import ask_planner, remember_failed_plan
from dcbrain.brain.running import run_plan
from dcbrain.brain.validation import validate
from dcbrain.events import ApprovalRequested, Budget, ErrorEvent
from dcbrain.exceptions import RunSuspended, TFTokenBudgetExceeded

if TYPE_CHECKING:
    from dcbrain.brain.run import BrainRun

__all__ = [
    "MOVES",
    "STATES",
    "Abort",
    "AwaitApprovals",
    "End",
    "Execute",
    "Fail",
    "Init",
    "Plan",
    "Step",
    "Succeed",
    "Validate",
    "drive",
    "triggers_from",
]

STATES: tuple[str, ...] = ("init", "planning", "running", "waiting", "succeeded", "failed",
                           "aborted")
ANY: frozenset[str] = frozenset(STATES)

#: Every trigger: the states it may leave and the state it enters (the seed's diagram).
MOVES: dict[str, tuple[frozenset[str], str]] = {
    "init": (ANY, "init"),
    "plan": (frozenset({"init", "planning", "running"}), "planning"),
    "exec_plan": (frozenset({"planning"}), "running"),
    # a plan stopped at calls that need approval; decided, it runs on
    "wait": (frozenset({"running"}), "waiting"),
    "resume": (frozenset({"waiting"}), "running"),
    "succeed": (frozenset({"planning", "running"}), "succeeded"),
    # from planning too: a budget stop or a planner failure ends the run there
    "fail": (frozenset({"planning", "running"}), "failed"),
    "abort": (ANY, "aborted"),
}


def triggers_from(state: str) -> set[str]:
    """The triggers allowed in ``state``."""
    return {trigger for trigger, (sources, _) in MOVES.items() if state in sources}


@dataclass(frozen=True)
class End:
    """The run is over: how it ended (the reason is on the run's intermediate result)."""

    status: BrainStatus
    reason: BrainReason


class Step(Protocol):
    """One phase of a run."""

    async def run(self, run: BrainRun) -> Step | End: ...


async def drive(run: BrainRun, step: Step) -> End:
    """Run ``step`` and every step it leads to, until the end."""
    while True:
        following = await step.run(run)
        if isinstance(following, End):
            return following
        step = following


@dataclass(frozen=True)
class Init:
    """The lifecycle's init: describe the chains and tools the plans may call."""

    async def run(self, run: BrainRun) -> Step | End:
        run.move("init")
        run.planning.describe_callables(run.brain.plan_callables(), run.context.chain_info)
        return Plan()


@dataclass(frozen=True)
class Plan:
    """Ask the planner (iterations and time permitting); a ```tf_plan block is the plan,
    other text the answer."""

    async def run(self, run: BrainRun) -> Step | End:
        run.control.check()
        ir, brain, budget, context = run.ir, run.brain, run.budget, run.context
        if run.mailbox is not None:
            run.mailbox.raise_if_new_input(context.conversation_id)
        if context.recall is None and run.memory is not None:
            recall = await run.memory.arecall(context.conversation_id,
                                              context.current_input.content,
                                              brain.memory_chunk_size)
            if recall is not None:
                run.planning.take_recall(context, recall)
        run.planning.update(
            ir,
            contextual_plan_info=run.attempts.of(context.conversation_id),
            iterations_left=max(brain.max_iterations - ir.iterations, 0),
            tokens_left=budget.remaining,
            journal=run.journal,
        )
        if ir.iterations >= brain.max_iterations:
            return Fail("max_iterations", budget=Budget(
                budget="max_iterations", used=ir.iterations, limit=brain.max_iterations,
                exhausted=True))
        elapsed = run.elapsed
        if ir.iterations > 0 and elapsed >= brain.timeout:
            return Fail("timeout", budget=Budget(budget="timeout", used=round(elapsed, 3),
                                                 limit=brain.timeout, exhausted=True))
        run.move("plan")
        ir.start_attempt()  # the previous plan and result are archived
        if budget.exhausted is not None:
            return Fail("max_tokens", error=spent(budget.exhausted))
        ir.iterations += 1
        budget.iterations_used = ir.iterations
        callables = [*brain.spec_chains, *(tool.name for tool in brain.tools)]
        async with eager_planning(run) as listen:  # read-only statements start early
            await ask_planner(ir, brain.planner, run.planning, run.control, run.recorder,
                              callables, run.journal, listen=listen)
        if ir.interpreter_err is not None:  # no usable plan: nothing to run
            run.attempts.record(ir)
        run.control.check()
        if ir.direct_answer:
            return Validate()
        if ir.current_plan is None:  # an unusable reply or a plan repeated once too often
            return Fail("repeated_plan") if ir.reason == "repeated_plan" else Plan()
        if ir.interpreter_err is None:
            return Execute()
        if budget.exhausted is not None:
            return Fail("max_tokens")
        return Validate()  # a plan refused before it ran: a failed attempt


def spent(exhausted: TFTokenBudgetExceeded) -> str:
    return f"{type(exhausted).__name__}: {exhausted}"


@dataclass(frozen=True)
class Execute:
    """Check and run the plan; recoverable errors become the attempt's ``interpreter_err``.

    A plan that reached calls needing approval stops there (:class:`AwaitApprovals`);
    once they are decided it runs again (``resumed``) from the journal: its finished
    calls are not made again.
    """

    resumed: bool = False

    async def run(self, run: BrainRun) -> Step | End:
        ir = run.ir
        if not self.resumed:
            run.move("exec_plan")
        run.gate.take_pending()
        interpreter = run._interpreter(run.plan_calls)
        try:
            await run_plan(ir, interpreter, run.recorder, run.control)
        finally:
            interpreter.close()  # an execution's own: a resumed one makes another
        requests = run.gate.take_pending()
        if requests and ir.current_result is None and ir.interpreter_err is None:
            return AwaitApprovals(tuple(requests))
        run.control.check()
        if run.budget.exhausted is not None:
            return Fail("max_tokens")
        return Validate()


@dataclass(frozen=True)
class AwaitApprovals:
    """Ask for decisions on ``requests`` (the brain's ``on_approval`` first) and wait for
    the ones left (state ``waiting``) — or, told not to wait, end this execution
    (:class:`~dcbrain.exceptions.RunSuspended`) with them in ``run.suspended``."""

    requests: tuple[ApprovalRequest, ...]

    async def run(self, run: BrainRun) -> Step | End:
        requests = [replace(request, run_id=run.run_id)
                    for request in with_plan(list(self.requests), run.ir.current_plan or "")]
        answered = await run.ask_on_approval(requests)
        pending = [request for request in requests if request.call_id not in answered]
        if pending:
            await run.desk.open(run.run_id, pending)
        for request in requests:
            run.recorder.emit(ApprovalRequested(
                call_id=request.call_id, kind=request.kind,  # type: ignore[arg-type]
                tool=request.tool, arguments=request.arguments, args_hash=request.args_hash,
                line=request.line, col=request.col, why=request.why, plan=request.plan,
                expires_at=request.expires_at))
        for decision in answered.values():
            run.take_decision(decision)
        if not pending:
            return Execute(resumed=True)
        run.move("wait")
        if not run.wait_for_approvals:
            run.suspended = pending
            raise RunSuspended(run.run_id)
        try:
            decisions = await run.control.interruptible(
                "run", run.desk.wait(run.run_id, pending, clock=run.clock))
        finally:
            if isinstance(run.desk, ApprovalBoard):  # an abort may cancel the wait unstarted
                run.desk.close(run.run_id)
        run.waited_s += max((decision.waited_s for decision in decisions), default=0.0)
        for decision in decisions:
            run.take_decision(decision)
        run.move("resume")
        return Execute(resumed=True)


@dataclass(frozen=True)
class Validate:
    """Judge the answer: a direct answer (judged too with ``validate_direct_answers``) or
    a plan's result the validator accepts, that fits the output type, ends the run; any
    other outcome is a failed attempt and the run plans again."""

    async def run(self, run: BrainRun) -> Step | End:
        run.control.check()
        ir, brain = run.ir, run.brain
        if ir.replanning:  # the plan looked something up for the planner: no verdict
            return Plan()
        if ir.direct_answer and not brain.validate_direct_answers:
            return accepted(run, "direct_answer")
        if not ir.direct_answer and (ir.interpreter_err is not None
                                     or ir.current_result is None):
            return failed_attempt(run)
        if run.mailbox is not None:
            run.mailbox.raise_if_new_input(ir.context.conversation_id)
        assert brain.validate_llm is not None
        solved = await validate(ir, brain.validate_llm, brain.validate_prompt, run.control,
                                run.recorder, run.journal, chain=brain.validator_chain())
        if not solved:
            if not ir.direct_answer:
                return failed_attempt(run)
            ir.direct_answer, ir.final_result = False, None  # rejected: plan again
            return Plan()
        return accepted(run, "direct_answer" if ir.direct_answer else "validated")


def accepted(run: BrainRun, reason: BrainReason) -> Step:
    """The end, if the accepted answer fits the output type; a misfit is a failed attempt."""
    if accept_output(run.ir, run.output_type):
        return Succeed(reason)
    run.recorder.emit(ErrorEvent(source="output_type", error=run.ir.last_error or ""))
    return failed_attempt(run)


def failed_attempt(run: BrainRun) -> Step:
    """Note the attempt as failed (its plan too, so it is not run again) and plan again."""
    remember_failed_plan(run.ir)
    run.attempts.record(run.ir)
    return Plan()


@dataclass(frozen=True)
class Succeed:
    """The answer is accepted: committed to the conversation, failed attempts forgotten."""

    reason: BrainReason

    async def run(self, run: BrainRun) -> Step | End:
        ir = run.ir
        run.move("succeed")
        ir.status, ir.reason = "succeeded", self.reason
        run.attempts.clear(ir.context.conversation_id)
        await run.commit(ir.answer_message(answer_text(ir.final_result)))
        return End("succeeded", self.reason)


@dataclass(frozen=True)
class Fail:
    """The run stops without an answer (a spent budget, a repeated plan, an error); the
    stop's ``budget`` event and ``error`` come with it. Outside planning and running
    there is nothing to fail: the run aborts."""

    reason: BrainReason
    budget: Budget | None = None
    error: str | None = None

    async def run(self, run: BrainRun) -> Step | End:
        ir = run.ir
        if self.budget is not None:
            run.recorder.emit(self.budget)
        if self.error is not None:
            ir.error = self.error
        if run.state not in MOVES["fail"][0]:
            return Abort(self.reason)
        run.move("fail")
        ir.status, ir.reason = "failed", self.reason
        run.attempts.record(ir)
        detail = ir.error or ir.suggestion or ir.last_error or ""
        await run.commit(ir.answer_message(f"(no answer: {ir.reason}) {detail}".strip()))
        return End("failed", self.reason)


@dataclass(frozen=True)
class Abort:
    """The run stops where it is: an abort was asked for, or something broke."""

    reason: BrainReason = "aborted"

    async def run(self, run: BrainRun) -> Step | End:
        ir = run.ir
        run.move("abort")
        ir.status, ir.reason = "aborted", self.reason
        run.attempts.record(ir)
        return End("aborted", self.reason)
