"""BrainRun: one run of a DCBrain question — its state, and the steps that answer it.

The run goes through the steps of :mod:`dcbrain.brain.steps` (``Init``, ``Plan``,
``Execute``, ``AwaitApprovals``, ``Validate``, then ``Succeed``, ``Fail`` or ``Abort``),
each returning the next; it announces the seed's lifecycle as it goes::

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
any number of runs at once. The public :meth:`BrainRun.abort` requests a stop (and
cancels the LLM call or plan in flight), from any task or thread; the run stops at its
next step. The work of each phase lives in its own module (``planning``, ``running``,
``validation``); stopping a run in ``control``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from dcbrain.approvals import (
    ApprovalDecision,
    ApprovalDesk,
    ApprovalRequest,
    ask_handler,
    decision_for,
    waited_s,
)
from dcbrain.brain.base import storable
from dcbrain.brain.budget import TokenBudget
from dcbrain.brain.context import (
    BrainContext,
    BrainIntermediateResult,
    BrainResult,
    DeferredEvents,
)
from dcbrain.brain.control import AbortRequested, RunControl
from dcbrain.brain.deps import Clock, RunDeps
from dcbrain.brain.output import OutputType
from dcbrain.brain.planning import PlanningContext
from dcbrain.brain.steps import MOVES, STATES, Abort, Fail, Init, drive
from dcbrain.brain.trace import PlanCallEvents, RunRecorder
from dcbrain.chain import RunScope, TFChainInterpreter
from dcbrain.chain.approval_gate import ApprovalGate
from dcbrain.events import (
    ApprovalDecided,
    BrainRunStarted,
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

    states: ClassVar[list[str]] = list(STATES)

    state: str

    def __init__(self, brain: DCBrain, question: str | TextMessage,
                 conversation_id: str = "default", *, run_id: str | None = None,
                 deps: RunDeps | None = None, output_type: Any = None,
                 wait_for_approvals: bool = True) -> None:
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
        self.started: float | None = None
        self.executed = False
        self.state = "init"

    # -- public control ----------------------------------------------------------------

    def abort(self) -> bool:
        """Stop this run as soon as possible (status ``aborted``); ``False`` if not running
        (asked before :meth:`execute`, it is kept: the run ends at its first step).

        Callable from any task or thread; the LLM call or plan in flight is cancelled.
        """
        return self.control.request_abort()

    @property
    def elapsed(self) -> float:
        """Seconds since the run started, on the run's clock, but for the time it waited
        for approvals."""
        return self.clock() - self.started - self.waited_s if self.started is not None else 0.0

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
                await self.commit(self.message)
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
        await recorder.finish(Final(**final))
        result.events = DeferredEvents(recorder.as_dicts)  # type: ignore[assignment]
        return result

    async def _drive(self) -> None:
        """The steps of the brain lifecycle; every stop ends in a terminal state."""
        ir = self.ir
        try:
            await drive(self, Init())
        except AbortRequested:
            await drive(self, Abort("aborted"))
        except TFUserNewInputError:
            raise
        except TFError as exc:
            ir.error = f"{type(exc).__name__}: {exc}"
            await drive(self, Fail("max_tokens" if self.budget.exhausted is not None
                                   else "error"))
        except Exception as exc:  # a bug in a chain, tool or callback: stop, keep the trajectory
            ir.error = f"{type(exc).__name__}: {exc}"
            logger.error("run %s stopped by an unexpected error: %s", self.run_id, ir.error,
                         exc_info=exc, extra={"run_id": self.run_id, "source": "brain"})
            await drive(self, Abort("error"))

    def move(self, trigger: str) -> None:
        """Enter the state ``trigger`` leads to, announced (``state_changed``); a move
        the seed's diagram does not allow from the current state is a bug."""
        sources, dest = MOVES[trigger]
        if self.state not in sources:
            raise TFBrainError(f"{trigger!r} is not allowed in state {self.state!r}")
        self.recorder.emit(StateChanged(source=self.state, dest=dest, trigger=trigger))
        self.state = dest

    def _close_open_calls(self, status: CallStatus) -> None:
        """Every call still open when the run stops ends now, so no view shows it running."""
        self.plan_calls.close_open(status)
        self.budget.close_open(status)

    # -- approvals ---------------------------------------------------------------------

    async def ask_on_approval(self, requests: list[ApprovalRequest]
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
            self.take_decision(decision, announce=decision.call_id not in announced)

    def take_decision(self, decision: ApprovalDecision, *, announce: bool = True) -> None:
        self.gate.add(decision)
        if announce:
            self.recorder.emit(ApprovalDecided(
                call_id=decision.call_id, tool=decision.tool, approved=decision.approved,
                reason=decision.reason, decided_by=decision.decided_by,
                decided_at=decision.decided_at))

    def _interpreter(self, observer: Any) -> TFChainInterpreter:
        context = self.context
        return TFChainInterpreter.of(self.brain.plan_callables(), RunScope(
            additional_info=context.chain_info, conversation=context.conversation,
            knowledge=context.knowledge, observer=observer, neural=self.mailbox,
            conversation_id=context.conversation_id, journal=self.journal,
            attempt=self.ir.iterations, run_id=self.run_id, approvals=self.gate,
            planner_saw=self.planning.untrusted_sources_shown,
            stop_asked=self.control.abort_asked))

    # -- helpers -----------------------------------------------------------------------

    async def commit(self, message: TextMessage) -> None:
        """Keep ``message`` in the run's conversation (nothing happens without memory)."""
        if self.memory is not None:
            await self.memory.acommit_message(self.conversation_id, storable(message))

