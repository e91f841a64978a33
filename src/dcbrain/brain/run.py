"""BrainRun: one run of a DCBrain question — the state machine's model.

The machine, declared below as data, mirrors the brain lifecycle's diagram::

    init ──plan──▶ planning ──exec_plan──▶ running ──succeed──▶ succeeded
                    │  ▲  │                  │  │ ▲
                    │  │  └──succeed──▶ succeeded (direct answer)
                    │  └───────plan──────────┘  │ └─resume── waiting (for approvals)
                    │                           ├──wait──────▶ waiting
                    │                           └──fail──▶ failed
                    └──fail──▶ failed (budget stops while planning)
    any state ──abort──▶ aborted        any state ──init──▶ init

``waiting`` is the seed's ``running`` paused: its plan reached calls that need a
person's decision, and it holds no thread or sandbox worker until they are decided.

A run owns everything that changes while it works: its attempts (the intermediate
result), token budget, event recorder, clock, call journal and abort control. The
:class:`~dcbrain.brain.DCBrain` that made it is configuration only, so one brain runs
any number of runs at once. The FSM's ``abort`` event is fired by the run itself; the
public :meth:`BrainRun.abort` only requests it (and cancels the LLM call or plan in
flight), from any task or thread. The work of each phase lives in its own module
(``planning``, ``running``, ``validation``); stopping a run in ``control``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from transitions import EventData

from dcbrain.approvals import (
    ApprovalBoard,
    ApprovalDecision,
    ApprovalDesk,
    ApprovalRequest,
    ask_handler,
    decision_for,
    waited_s,
    with_plan,
)
from dcbrain.brain.base import answer_text, storable
from dcbrain.brain.budget import TokenBudget
from dcbrain.brain.context import BrainContext, BrainIntermediateResult, BrainReason, BrainResult
from dcbrain.brain.control import AbortRequested, BrainMachine, RunControl
from dcbrain.brain.deps import Clock, RunDeps
from dcbrain.brain.eager import eager_planning, plan_tools
from dcbrain.brain.output import OutputType, accept_output
from dcbrain.brain.planning import PlanningContext, ask_planner, remember_failed_plan
from dcbrain.brain.running import run_plan
from dcbrain.brain.trace import PlanCallEvents, RunRecorder
from dcbrain.brain.validation import validate
from dcbrain.chain import TFChainInterpreter
from dcbrain.chain.approval_gate import ApprovalGate
from dcbrain.events import (
    ApprovalDecided,
    ApprovalRequested,
    BrainRunStarted,
    Budget,
    CallStatus,
    ErrorEvent,
    Final,
    RunResumed,
    StateChanged,
    clip,
)
from dcbrain.exceptions import RunSuspended, TFBrainError, TFError, TFUserNewInputError
from dcbrain.journal import CallJournal
from dcbrain.llm.observe import llm_observer, observe_llm_calls
from dcbrain.messages import TextMessage, as_message

if TYPE_CHECKING:
    from dcbrain.brain.dc_brain import DCBrain

__all__ = ["BrainRun", "Clock"]

logger = logging.getLogger("dcbrain.brain")

#: ``decided_by`` of a decision an ``on_approval`` handler took.
BY_HANDLER = "on_approval"


class BrainRun:
    """One question answered by a :class:`~dcbrain.brain.DCBrain`: its machine and its state.

    Made by :meth:`DCBrain.start_run`; :meth:`execute` runs it once. ``run_id`` is the
    caller's or a new one; every event and the result carry it. ``deps`` are what this
    run uses beside the brain's configuration (memory, failed-attempt store, journal,
    clock, input mailbox, subscribers): see :class:`~dcbrain.brain.deps.RunDeps`.
    """

    states: ClassVar[list[str]] = ["init", "planning", "running", "waiting", "succeeded",
                                   "failed", "aborted"]
    transitions: ClassVar[list[dict[str, Any]]] = [
        {"trigger": "init", "source": "*", "dest": "init"},
        {
            "trigger": "plan",
            "source": ["init", "planning", "running"],
            "dest": "planning",
            "prepare": "prepare_plan",
            "conditions": "condition_plan",
            "before": "before_plan",
        },
        {
            "trigger": "exec_plan",
            "source": "planning",
            "dest": "running",
            "conditions": "condition_exec_plan",
        },
        # A plan stopped at calls that need approval; decided, it runs on.
        {"trigger": "wait", "source": "running", "dest": "waiting"},
        {"trigger": "resume", "source": "waiting", "dest": "running"},
        {
            "trigger": "succeed",
            "source": ["planning", "running"],
            "dest": "succeeded",
            "conditions": "condition_succeed",
        },
        # From planning too: a budget stop or a planner failure ends the run there.
        {"trigger": "fail", "source": ["planning", "running"], "dest": "failed"},
        {"trigger": "abort", "source": "*", "dest": "aborted"},
    ]

    state: str
    trigger: Callable[..., Coroutine[Any, Any, bool]]

    def __init__(
        self,
        brain: DCBrain,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        run_id: str | None = None,
        deps: RunDeps | None = None,
        output_type: Any = None,
        wait_for_approvals: bool = True,
    ) -> None:
        deps = deps if deps is not None else RunDeps()
        self.brain = brain
        self.deps = deps
        self.message = as_message(question)
        self.conversation_id = conversation_id
        self.run_id = run_id or uuid.uuid4().hex
        self.clock: Clock = deps.clock
        self.journal = deps.journal if deps.journal is not None else CallJournal()
        self.memory = deps.memory if deps.memory is not None else brain.memory
        self.mailbox = deps.mailbox if deps.mailbox is not None else brain.neural
        self.attempts = brain.failed_attempts(deps.run_store)
        subscribers = [*brain._subscribers, *deps.subscribers]
        self.resumed = deps.resumed
        self.recorder = RunRecorder(self.run_id, subscribers, trace_path=brain.trace_path,
                                    first_seq=deps.resumed.first_seq if deps.resumed else 0)
        self.budget = TokenBudget(
            brain.max_tokens,
            emit=self.recorder.emit,
            parent=llm_observer.get(),
            max_iterations=brain.max_iterations,
        )
        self.context = BrainContext.for_question(
            self.message, conversation_id, self.run_id, list(brain.tools)
        )
        self.ir = BrainIntermediateResult(self.context)
        self.output_type = OutputType(output_type) if output_type is not None \
            else brain._output_type
        self.planning = PlanningContext.for_run(
            brain, self.context, self.output_type.schema if self.output_type else "")
        # one observer for every plan of the run, so call ids stay unique in the run
        self.plan_calls = PlanCallEvents(self.recorder)
        self.control = RunControl()
        self.desk: ApprovalDesk = deps.approvals if deps.approvals is not None \
            else brain.approvals
        self.gate = ApprovalGate(timeout_s=brain.approval_timeout_s)
        #: ``False``: the run ends its execution when its calls wait for decisions
        #: (:attr:`suspended` holds them) instead of waiting for them.
        self.wait_for_approvals = wait_for_approvals
        self.suspended: list[ApprovalRequest] = []
        #: Seconds spent waiting for decisions: they do not count against the timeout.
        self.waited_s = 0.0
        self.started = 0.0
        self.executed = False
        self.machine = BrainMachine(
            model=self,
            states=self.states,
            transitions=self.transitions,
            initial="init",
            auto_transitions=False,
            send_event=True,
            before_state_change="emit_state_change",
        )

    # -- public control ----------------------------------------------------------------

    def abort(self) -> bool:
        """Stop this run as soon as possible (status ``aborted``); ``False`` if not running.

        Callable from any task or thread; the LLM call or plan in flight is cancelled.
        """
        return self.control.request_abort()

    @property
    def elapsed(self) -> float:
        """Seconds since the run started, on the run's clock, but for the time it waited
        for approvals."""
        return self.clock() - self.started - self.waited_s if self.started else 0.0

    # -- the run -----------------------------------------------------------------------

    async def execute(self) -> BrainResult:
        """Answer the question; returns a :class:`BrainResult` on every stop, a timeout too.

        New user input raises :class:`~dcbrain.exceptions.TFUserNewInputError` untouched.
        (:meth:`DCBrain.async_run` is what raises a timeout, as the product promises.)
        """
        if self.executed:
            raise TFBrainError(f"run {self.run_id} was already executed")
        self.executed = True
        brain, recorder, ir = self.brain, self.recorder, self.ir
        self.control.start(asyncio.get_running_loop())
        self.started = self.clock()
        wall_started = time.time()
        if self.resumed is not None:  # the story so far was the earlier executions'
            for closed in self.resumed.interrupted:
                recorder.emit(closed)
            recorder.emit(RunResumed(execution=self.resumed.execution,
                                     reason=self.resumed.reason,
                                     earlier_duration_s=round(self.resumed.duration_s, 3)))
        recorder.emit(BrainRunStarted(
            question=self.message.content,
            conversation_id=self.conversation_id,
            chains=sorted(brain.spec_chains),
            tools=[tool.name for tool in brain.tools],
            max_iterations=brain.max_iterations,
            max_tokens=brain.max_tokens,
            timeout=brain.timeout,
        ))
        try:
            await self._take_earlier_decisions()
            if self.resumed is None or not self.resumed.question_kept:
                await self._commit(self.message)
            with observe_llm_calls(self.budget):
                await self._drive()
        except RunSuspended:
            recorder.close()  # its requests are out: another execution goes on
            raise
        except BaseException as exc:
            self._close_open_calls("error" if isinstance(exc, Exception) else "aborted")
            recorder.emit(ErrorEvent(source="brain", error=f"{type(exc).__name__}: {exc}"))
            recorder.close()
            raise
        finally:
            self.control.finish()
        self._close_open_calls("aborted" if ir.status == "aborted" else "error")
        usage, duration_s = self.budget.usage.copy(), self.elapsed
        if self.resumed is not None:  # a run's cost and time are those of every execution
            usage = usage + self.resumed.usage
            duration_s = self.resumed.duration_s + (time.time() - wall_started)
        result = BrainResult.from_intermediate(ir, usage, duration_s)
        result.validated_by = ir.validated_by
        result.reused_calls = self.plan_calls.reused
        final = result.to_dict(include_events=False)
        final["last_result"] = clip(final["last_result"])  # in full on the result
        recorder.emit(Final(**final))
        recorder.close()
        result.events = recorder.as_dicts()
        return result

    async def _drive(self) -> None:
        """The loop of the brain lifecycle; every stop ends in a terminal state."""
        ir = self.ir
        try:
            await self._fire("init")
            while True:
                self.control.check()
                if not await self._fire("plan"):
                    await self._stop(ir.reason or "error")
                    return
                self.control.check()
                if ir.direct_answer:
                    if await self._fire("succeed"):
                        return
                    continue  # rejected by the validator or not of the output type
                if ir.current_plan is None:  # an unusable reply or a repeated plan
                    if ir.reason == "repeated_plan":
                        await self._stop("repeated_plan")
                        return
                    continue
                await self._fire("exec_plan")
                self.control.check()
                if self.budget.exhausted is not None:
                    await self._stop("max_tokens")
                    return
                if await self._fire("succeed"):
                    return
        except AbortRequested:
            await self._stop("aborted")
        except TFUserNewInputError:
            raise
        except TFError as exc:
            ir.error = f"{type(exc).__name__}: {exc}"
            await self._stop("max_tokens" if self.budget.exhausted is not None else "error")
        except Exception as exc:  # a bug in a chain, tool or callback: stop, keep the trajectory
            ir.error = f"{type(exc).__name__}: {exc}"
            await self._stop("error", unexpected=True)

    async def _fire(self, trigger: str, **kwargs: Any) -> bool:
        """Fire ``trigger``; re-raise the stop the machine held back, and a cancellation of
        this task, which the library swallows."""
        done = await self.trigger(trigger, **kwargs)
        stop = self.machine.take_stop()
        if stop is not None:
            raise stop
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        return bool(done)

    async def _stop(self, reason: BrainReason, *, unexpected: bool = False) -> None:
        if reason == "aborted" or unexpected or self.state not in ("planning", "running"):
            await self._fire("abort", reason=reason)
        else:
            await self._fire("fail", reason=reason)

    def _close_open_calls(self, status: CallStatus) -> None:
        """Every call still open when the run stops ends now, so no view shows it running."""
        self.plan_calls.close_open(status)
        self.budget.close_open(status)

    # -- machine callbacks: events -----------------------------------------------------

    def emit_state_change(self, event: EventData) -> None:
        """Announce the change before the new state's ``on_enter`` work starts."""
        if event.transition is not None:
            self.recorder.emit(StateChanged(
                source=event.transition.source,
                dest=event.transition.dest,
                trigger=event.event.name,
            ))

    # -- machine callbacks: init and planning ------------------------------------------

    async def on_enter_init(self, event: EventData) -> None:
        """Describe the chains and tools the plans may call (the lifecycle's init)."""
        if self.executed:
            self.planning.describe(self._interpreter(observer=None).describe_callables())

    async def prepare_plan(self, event: EventData) -> None:
        """Recall memory, bring in the last suggestion, earlier failures and budgets."""
        brain, context = self.brain, self.context
        if not self.executed:
            return
        if self.mailbox is not None:
            self.mailbox.raise_if_new_input(context.conversation_id)
        if context.recall is None and self.memory is not None:
            recall = await self.memory.arecall(context.conversation_id,
                                               context.current_input.content,
                                               brain.memory_chunk_size)
            if recall is not None:
                self.planning.take_recall(context, recall)
        self.planning.update(
            self.ir,
            contextual_plan_info=self.attempts.of(context.conversation_id),
            iterations_left=max(brain.max_iterations - self.ir.iterations, 0),
            tokens_left=self.budget.remaining,
            journal=self.journal,
        )

    def condition_plan(self, event: EventData) -> bool:
        """Another planning is allowed: iterations left and (after the first) time left."""
        ir, brain = self.ir, self.brain
        if not self.executed:
            return False
        if ir.iterations >= brain.max_iterations:
            ir.reason = "max_iterations"
            self._budget_stop("max_iterations", ir.iterations, brain.max_iterations)
            return False
        elapsed = self.elapsed
        if ir.iterations > 0 and elapsed >= brain.timeout:
            ir.reason = "timeout"
            self._budget_stop("timeout", round(elapsed, 3), brain.timeout)
            return False
        return True

    def before_plan(self, event: EventData) -> None:
        """Archive the previous plan and result; start a fresh attempt."""
        self.ir.start_attempt()

    async def on_enter_planning(self, event: EventData) -> None:
        """Ask the planner; a ```tf_plan block is the plan, other text the answer."""
        ir, brain, budget = self.ir, self.brain, self.budget
        if budget.exhausted is not None:
            raise budget.exhausted
        ir.iterations += 1
        budget.iterations_used = ir.iterations
        callables = [*brain.spec_chains, *(tool.name for tool in brain.tools)]
        async with eager_planning(self) as listen:  # read-only statements start early
            await ask_planner(ir, brain.planner, self.planning, self.control, self.recorder,
                              callables, self.journal, listen=listen)
        if ir.interpreter_err is not None:  # no usable plan: nothing to run
            self.attempts.record(ir)

    # -- machine callbacks: running ----------------------------------------------------

    def condition_exec_plan(self, event: EventData) -> bool:
        """There is a plan that has not run yet."""
        ir = self.ir
        return ir.current_plan is not None and ir.current_result is None \
            and ir.interpreter_err is None

    async def on_enter_running(self, event: EventData) -> None:
        """Check and run the plan; recoverable errors become ``interpreter_err``.

        A plan that reached calls needing approval stops there; once they are decided it
        runs again from the journal (its finished calls are not made again).
        """
        if self.ir.current_plan is None or event.event.name == "resume":
            return  # back from waiting: the loop below that waited goes on
        while True:
            self.gate.take_pending()
            await run_plan(self.ir, self._interpreter(self.plan_calls), self.recorder,
                           self.control)
            requests = self.gate.take_pending()
            if not requests or self.ir.current_result is not None \
                    or self.ir.interpreter_err is not None:
                return
            await self._wait_for_approvals(requests)

    async def _wait_for_approvals(self, requests: list[ApprovalRequest]) -> None:
        """Ask for decisions on ``requests`` (the brain's ``on_approval`` first) and wait
        for the ones left in state ``waiting`` — or, told not to wait, end this execution
        (:class:`RunSuspended`) with them in :attr:`suspended`."""
        requests = [replace(request, run_id=self.run_id)
                    for request in with_plan(requests, self.ir.current_plan or "")]
        answered = await self._ask_handler(requests)
        pending = [request for request in requests if request.call_id not in answered]
        if pending:
            await self.desk.open(self.run_id, pending)
        for request in requests:
            self.recorder.emit(ApprovalRequested(
                call_id=request.call_id, kind=request.kind,  # type: ignore[arg-type]
                tool=request.tool, arguments=request.arguments, args_hash=request.args_hash,
                line=request.line, col=request.col, why=request.why, plan=request.plan,
                expires_at=request.expires_at))
        for decision in answered.values():
            self._take_decision(decision)
        if not pending:
            return
        await self.trigger("wait")
        if not self.wait_for_approvals:
            self.suspended = pending
            raise RunSuspended(self.run_id)
        try:
            decisions = await self.control.interruptible(
                "run", self.desk.wait(self.run_id, pending, clock=self.clock))
        finally:
            if isinstance(self.desk, ApprovalBoard):  # an abort may cancel the wait unstarted
                self.desk.close(self.run_id)
        self.waited_s += max((decision.waited_s for decision in decisions), default=0.0)
        for decision in decisions:
            self._take_decision(decision)
        await self.trigger("resume")

    async def _ask_handler(self, requests: list[ApprovalRequest]
                           ) -> dict[str, ApprovalDecision]:
        """The decisions the brain's ``on_approval`` handler took, by call id; one that
        fails is reported on the run (an ``error`` event and the log) and its request
        stays pending."""
        handler = self.brain.on_approval
        answered: dict[str, ApprovalDecision] = {}
        if handler is None:
            return answered
        for request in requests:
            try:
                answer = await self.control.interruptible("run", ask_handler(handler, request))
            except AbortRequested:
                raise
            except Exception as exc:
                self.report_error("on_approval", f"on_approval failed on call "
                                  f"{request.call_id} ({request.tool}); it waits for a "
                                  f"decision: {type(exc).__name__}: {exc}", exc)
                continue
            if answer is not None:
                answered[request.call_id] = decision_for(
                    request, approved=answer[0], reason=answer[1], by=BY_HANDLER)
        return answered

    def report_error(self, source: str, error: str, exc: BaseException | None = None) -> None:
        """Tell the run's readers (an ``error`` event) and the log of a failure the run
        survives."""
        logger.error("run %s: %s", self.run_id, error, exc_info=exc,
                     extra={"run_id": self.run_id, "source": source})
        self.recorder.emit(ErrorEvent(source=source, error=error))

    async def _take_earlier_decisions(self) -> None:
        """The decisions earlier executions of this run waited for (a durable run's)."""
        decisions = await self.desk.decisions(self.run_id)
        if not decisions:
            return
        self.waited_s = waited_s(decisions)
        announced = self.resumed.decided if self.resumed is not None else frozenset()
        for decision in decisions:
            self._take_decision(decision, announce=decision.call_id not in announced)

    def _take_decision(self, decision: ApprovalDecision, *, announce: bool = True) -> None:
        self.gate.add(decision)
        if announce:
            self.recorder.emit(ApprovalDecided(
                call_id=decision.call_id, tool=decision.tool, approved=decision.approved,
                reason=decision.reason, decided_by=decision.decided_by,
                decided_at=decision.decided_at))

    def _interpreter(self, observer: Any) -> TFChainInterpreter:
        brain, context = self.brain, self.context
        return TFChainInterpreter(
            brain.spec_chains,
            tools=plan_tools(brain),
            additional_info=context.chain_info,
            limits=brain.limits,
            default_llm=brain.default_llm,
            conversation=context.conversation,
            knowledge=context.knowledge,
            observer=observer,
            neural=self.mailbox,
            conversation_id=context.conversation_id,
            journal=self.journal,
            attempt=self.ir.iterations,
            run_id=self.run_id,
            isolation=brain.isolation,
            approvals=self.gate,
            policies=brain.policies,
            policy_mode=brain.policy_mode,
            flow_check=brain.policy_mode != "off",
            planner_saw=self.planning.untrusted_sources_shown,
            on_violation=brain.on_violation,
        )

    # -- machine callbacks: validation -------------------------------------------------

    async def condition_succeed(self, event: EventData) -> bool:
        """A direct answer (judged too with ``validate_direct_answers``), or a plan result
        the validator accepts, that fits the output type."""
        ir, brain = self.ir, self.brain
        if ir.replanning:  # the plan looked something up for the planner: no verdict
            return False
        if ir.direct_answer and not brain.validate_direct_answers:
            ir.reason = "direct_answer"
            return self._accept_output()
        if not ir.direct_answer and (ir.interpreter_err is not None
                                     or ir.current_result is None):
            remember_failed_plan(ir)
            self.attempts.record(ir)
            return False
        if self.mailbox is not None:
            self.mailbox.raise_if_new_input(ir.context.conversation_id)
        assert brain.validate_llm is not None
        solved = await validate(ir, brain.validate_llm, brain.validate_prompt, self.control,
                                self.recorder, self.journal)
        if not solved:
            if ir.direct_answer:  # rejected: plan again
                ir.direct_answer, ir.final_result = False, None
            else:
                remember_failed_plan(ir)
                self.attempts.record(ir)
            return False
        return self._accept_output()

    def _accept_output(self) -> bool:
        """Whether the accepted answer fits the output type; a misfit is a failed attempt."""
        ir = self.ir
        if accept_output(ir, self.output_type):
            return True
        self.recorder.emit(ErrorEvent(source="output_type", error=ir.last_error or ""))
        remember_failed_plan(ir)
        self.attempts.record(ir)
        return False

    # -- machine callbacks: terminal states --------------------------------------------

    async def on_enter_succeeded(self, event: EventData) -> None:
        ir = self.ir
        ir.status = "succeeded"
        self.attempts.clear(ir.context.conversation_id)
        await self._commit(ir.answer_message(answer_text(ir.final_result)))

    async def on_enter_failed(self, event: EventData) -> None:
        ir = self.ir
        ir.status = "failed"
        ir.reason = event.kwargs.get("reason", ir.reason or "error")
        self.attempts.record(ir)
        detail = ir.error or ir.suggestion or ir.last_error or ""
        answer = ir.answer_message(f"(no answer: {ir.reason}) {detail}".strip())
        await self._commit(answer)

    async def on_enter_aborted(self, event: EventData) -> None:
        ir = self.ir
        if not self.executed:
            return
        ir.status = "aborted"
        ir.reason = event.kwargs.get("reason", "aborted")
        self.attempts.record(ir)

    # -- helpers -----------------------------------------------------------------------

    async def _commit(self, message: TextMessage) -> None:
        """Keep ``message`` in the run's conversation (nothing happens without memory)."""
        if self.memory is not None:
            await self.memory.acommit_message(self.conversation_id, storable(message))

    def _budget_stop(self, budget: str, used: float, limit: float) -> None:
        self.recorder.emit(Budget(budget=budget, used=used, limit=limit, exhausted=True))
