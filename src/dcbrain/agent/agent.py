"""PlanExecuteAgent: plan, execute step by step, replan from the cursor, under two budgets.

The executor is a small state machine (the plan–execute lifecycle)::

    idle ──start──▶ planning ──plan_ready──▶ executing ──finish──▶ completed
                       │                      │    ▲
                       │               step_failed  plan_ready
                       │                      ▼    │
                       └──────stop──────▶ replanning ──stop──▶ failed

A replannable failure hands the error to the planner, and the new plan runs from the
cursor. Every new plan is a :class:`~dcbrain.agent.diff.PlanDiff` event. ``max_steps``
caps step executions in the whole session (replans included); ``max_replans`` caps
planner calls after the first.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, runtime_checkable

from transitions import EventData, Machine

from dcbrain._sync import run_sync
from dcbrain.agent.diff import PlanDiff
from dcbrain.agent.dispatcher import Dispatcher, FailurePolicy, StepOutcome
from dcbrain.agent.refs import resolve_references
from dcbrain.agent.step import Step, validate_plan
from dcbrain.events import (
    DEFAULT_CLIP,
    AgentRunStarted,
    Budget,
    ErrorEvent,
    Event,
    EventLog,
    Final,
    PlanCreated,
    PlanRevised,
    StateChanged,
    StepFinished,
    StepStarted,
    clip,
    clip_arguments,
)
from dcbrain.exceptions import TFPlanError, TFReferenceError
from dcbrain.tools import Tool, ToolLike
from dcbrain.values.jsonsafe import dumps

PlanLike: TypeAlias = Sequence[Step | Mapping[str, Any]]
Planner: TypeAlias = Callable[[str, list[Step], str | None], PlanLike | Awaitable[PlanLike]]
"""``planner(goal, history, last_error) -> list[Step]``, sync or async."""

SessionStatus = Literal["completed", "failed"]
SessionReason = Literal[
    "goal_met", "step_budget", "replan_budget", "no_plan", "aborted", "fatal_error"
]


@runtime_checkable
class ToolAwarePlanner(Protocol):
    """A planner that needs the agent's tools (e.g. to describe them to an LLM)."""

    def bind_tools(self, tools: Mapping[str, Tool]) -> Planner: ...


@dataclass
class SessionResult:
    """How a session ended and everything that happened on the way.

    ``status`` is ``completed`` (reason ``goal_met``) or ``failed`` (``step_budget``,
    ``replan_budget``, ``no_plan``, ``aborted``, ``fatal_error``). ``history`` holds every
    executed or cached step in order, ``revisions`` every plan change, ``plan`` the last
    plan, ``events`` the whole event stream as dicts.
    """

    status: SessionStatus
    reason: SessionReason
    goal: str
    history: list[Step]
    revisions: list[PlanDiff]
    events: list[dict[str, Any]]
    plan: list[Step] = field(default_factory=list)
    steps_executed: int = 0
    replans: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "goal": self.goal,
            "history": [step.to_dict() for step in self.history],
            "revisions": [diff.to_dict() for diff in self.revisions],
            "plan": [step.to_dict() for step in self.plan],
            "steps_executed": self.steps_executed,
            "replans": self.replans,
            "error": self.error,
            "events": list(self.events),
        }


class PlanExecuteAgent:
    """Runs a planner's typed steps through a tool registry, replanning on failure.

    ``tools`` maps names to plain functions (sync or async) or :class:`Tool` objects.
    ``failure_policy`` (``"replan"`` by default, or ``"skip"``/``"abort"``) applies to a
    replannable failure; ``tool_policies`` overrides it per tool. ``cache`` reuses the
    results of calls that already succeeded in an earlier plan revision. ``on_event``
    receives every :class:`~dcbrain.events.Event` as it happens. One agent may run many
    sessions, also concurrently: each run has its own state.
    """

    def __init__(
        self,
        planner: Planner | ToolAwarePlanner,
        tools: Mapping[str, ToolLike] | Sequence[ToolLike],
        *,
        max_steps: int = 12,
        max_replans: int = 5,
        failure_policy: FailurePolicy = "replan",
        tool_policies: Mapping[str, FailurePolicy] | None = None,
        cache: bool = True,
        max_concurrency: int = 4,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if max_replans < 0:
            raise ValueError("max_replans must be 0 or more")
        self.dispatcher = Dispatcher(
            tools,
            failure_policy=failure_policy,
            tool_policies=tool_policies,
            max_concurrency=max_concurrency,
        )
        self.planner: Planner = (
            planner.bind_tools(self.tools) if isinstance(planner, ToolAwarePlanner) else planner
        )
        self.max_steps = max_steps
        self.max_replans = max_replans
        self.cache = cache
        self.on_event = on_event

    @property
    def tools(self) -> dict[str, Tool]:
        return self.dispatcher.tools

    def run(self, goal: str) -> SessionResult:
        """Blocking :meth:`arun`; usable with or without a running event loop."""
        return run_sync(lambda: self.arun(goal))

    async def arun(self, goal: str) -> SessionResult:
        """Run a session to its end and return how it went."""
        return await _Session(self, goal).run()


class _Session:
    """The executor state machine of one run: plan, execute, replan, stop."""

    states: ClassVar[list[str]] = [
        "idle",
        "planning",
        "executing",
        "replanning",
        "completed",
        "failed",
    ]
    transitions: ClassVar[list[dict[str, Any]]] = [
        {"trigger": "start", "source": "idle", "dest": "planning"},
        {"trigger": "plan_ready", "source": ["planning", "replanning"], "dest": "executing"},
        {"trigger": "step_failed", "source": "executing", "dest": "replanning"},
        {"trigger": "finish", "source": "executing", "dest": "completed"},
        {"trigger": "stop", "source": ["planning", "executing", "replanning"], "dest": "failed"},
    ]

    # Bound by the machine; declared for type checkers.
    state: str
    start: Callable[..., bool]
    plan_ready: Callable[..., bool]
    step_failed: Callable[..., bool]
    finish: Callable[..., bool]
    stop: Callable[..., bool]

    def __init__(self, agent: PlanExecuteAgent, goal: str) -> None:
        self.agent = agent
        self.goal = goal
        self.events = EventLog(run_id=uuid.uuid4().hex[:12])
        if agent.on_event is not None:
            self.events.subscribe(agent.on_event)
        self.plan: list[Step] = []
        self.cursor = 0
        self.revision = -1
        self.history: list[Step] = []
        self.revisions: list[PlanDiff] = []
        self.executions = 0
        self.planner_calls = 0
        self.replans = 0
        self.reason: SessionReason = "goal_met"
        self.error: str | None = None
        self._succeeded: dict[str, tuple[int, Any]] = {}
        Machine(
            model=self,
            states=self.states,
            transitions=self.transitions,
            initial="idle",
            auto_transitions=False,
            send_event=True,
            after_state_change="emit_state_change",
        )

    # -- machine callbacks -------------------------------------------------------------

    def emit_state_change(self, event: EventData) -> None:
        if event.transition is not None:
            source, dest = event.transition.source, event.transition.dest
            self.events.emit(StateChanged(source=source, dest=dest,
                                          trigger=event.event.name))

    def on_enter_failed(self, event: EventData) -> None:
        self.reason = event.kwargs["reason"]
        self.error = event.kwargs.get("error", self.error)

    # -- the run -----------------------------------------------------------------------

    async def run(self) -> SessionResult:
        agent = self.agent
        self.events.emit(AgentRunStarted(
            goal=self.goal,
            tools=sorted(agent.tools),
            max_steps=agent.max_steps,
            max_replans=agent.max_replans,
        ))
        self.start()
        if await self._next_plan(None):
            await self._execute()
        return self._result()

    async def _execute(self) -> None:
        agent = self.agent
        while True:
            if self.cursor == len(self.plan):
                self.finish()
                return
            step = self.plan[self.cursor]
            if self._reuse(step):
                continue
            if self.executions >= agent.max_steps:
                self._budget("max_steps", agent.max_steps, self.executions)
                self.stop(reason="step_budget", error=f"step budget of {agent.max_steps} spent")
                return
            outcome = await self._dispatch(step)
            if outcome.ok:
                self.cursor += 1
                continue
            if outcome.kind == "fatal":
                self.stop(reason="fatal_error", error=outcome.error)
                return
            policy = agent.dispatcher.policy_for(step)
            if policy == "skip":
                self.cursor += 1
                continue
            if policy == "abort":
                self.stop(reason="aborted", error=outcome.error)
                return
            self.step_failed(error=outcome.error)
            if not await self._next_plan(outcome.error):
                return

    async def _dispatch(self, step: Step) -> StepOutcome:
        self.executions += 1
        call = self._resolved(step)
        self.events.emit(StepStarted(
            revision=step.revision,
            step_id=step.id,
            tool_name=step.tool_name,
            args=clip_arguments(step.args, DEFAULT_CLIP),
            expected_outcome=step.expected_outcome,
            execution=self.executions,
        ))
        if isinstance(call, str):
            outcome = StepOutcome("replannable", error=call)
        else:
            outcome = await self.agent.dispatcher.dispatch(call, self.events)
        step.result, step.error = outcome.result, outcome.error
        step.status = "succeeded" if outcome.ok else "failed"
        self.history.append(step.snapshot())
        if outcome.ok and not isinstance(call, str):
            self._succeeded[_call_key(call)] = (step.revision, step.result)
        self.events.emit(StepFinished(
            revision=step.revision,
            step_id=step.id,
            tool_name=step.tool_name,
            status=step.status,
            outcome=outcome.kind,
            policy=None if outcome.ok else self.agent.dispatcher.policy_for(step),
            cached=False,
            result=clip(step.result),
            error=step.error,
            expected_outcome=step.expected_outcome,
            execution=self.executions,
        ))
        return outcome

    def _resolved(self, step: Step) -> Step | str:
        """``step`` with its ``$ref`` arguments resolved, or the error that prevents it."""
        results = {done.id: done.result for done in self.history
                   if done.status in ("succeeded", "cached")}
        try:
            args = resolve_references(step.args, results)
        except TFReferenceError as exc:
            return f"step {step.id} ({step.tool_name}) failed: {exc}"
        return step if args == step.args else dataclasses.replace(step, args=args)

    def _reuse(self, step: Step) -> bool:
        """Serve ``step`` from a success of an earlier revision (the partial-plan cache)."""
        call = self._resolved(step)
        if isinstance(call, str):
            return False
        hit = self._succeeded.get(_call_key(call)) if self.agent.cache else None
        if hit is None or hit[0] >= step.revision:
            return False
        step.result, step.status = copy.deepcopy(hit[1]), "cached"
        self.history.append(step.snapshot())
        self.events.emit(StepFinished(
            revision=step.revision,
            step_id=step.id,
            tool_name=step.tool_name,
            status="cached",
            outcome="success",
            policy=None,
            cached=True,
            result=clip(step.result),
            error=None,
            expected_outcome=step.expected_outcome,
        ))
        self.cursor += 1
        return True

    async def _next_plan(self, last_error: str | None) -> bool:
        """Ask the planner until it returns a valid plan and adopt it; False if stopped."""
        agent = self.agent
        while True:
            if self.planner_calls > 0:
                if self.replans >= agent.max_replans:
                    self._budget("max_replans", agent.max_replans, self.replans)
                    self.stop(reason="replan_budget", error=last_error)
                    return False
                if self.executions >= agent.max_steps:
                    self._budget("max_steps", agent.max_steps, self.executions)
                    self.stop(reason="step_budget", error=last_error)
                    return False
                self.replans += 1
            self.planner_calls += 1
            try:
                raw = await _call_planner(agent.planner, self.goal, self.history, last_error)
                plan = validate_plan(raw, agent.tools, revision=self.revision + 1)
            except TFPlanError as exc:
                last_error = str(exc)
                self.events.emit(ErrorEvent(source="planner", error=last_error))
                continue
            except Exception as exc:  # a broken planner ends the run, with a record
                error = f"planner raised {type(exc).__name__}: {exc}"
                self.events.emit(ErrorEvent(source="planner", error=error))
                self.stop(reason="fatal_error", error=error)
                return False
            if not plan:
                self.stop(reason="no_plan", error=last_error)
                return False
            self._adopt(plan, last_error)
            self.plan_ready()
            return True

    def _adopt(self, plan: list[Step], last_error: str | None) -> None:
        self.revision += 1
        if self.revision == 0:
            self.events.emit(PlanCreated(
                revision=0,
                steps=[step.to_dict() for step in plan],
            ))
        else:
            done_ids = {step.id for step in self.plan[: self.cursor]}
            diff = PlanDiff.compute(
                self.plan, plan, done_ids=done_ids, revision=self.revision, reason=last_error
            )
            self.revisions.append(diff)
            self.events.emit(PlanRevised(
                revision=diff.revision,
                reason=last_error,
                diff=diff.to_data(),
                summary=diff.render(),
                steps=[step.to_dict() for step in plan],
            ))
        self.plan, self.cursor = plan, 0

    def _budget(self, name: str, limit: int, used: int) -> None:
        self.events.emit(Budget(budget=name, limit=limit, used=used, exhausted=True))

    def _result(self) -> SessionResult:
        status: SessionStatus = "completed" if self.state == "completed" else "failed"
        self.events.emit(Final(
            status=status,
            reason=self.reason,
            run_id=self.events.run_id,
            steps_executed=self.executions,
            replans=self.replans,
            error=self.error,
        ))
        return SessionResult(
            status=status,
            reason=self.reason,
            goal=self.goal,
            history=[step.snapshot() for step in self.history],
            revisions=list(self.revisions),
            events=self.events.as_dicts(),
            plan=[step.snapshot() for step in self.plan],
            steps_executed=self.executions,
            replans=self.replans,
            error=self.error,
        )


async def _call_planner(
    planner: Planner, goal: str, history: list[Step], last_error: str | None
) -> object:
    plan = planner(goal, [step.snapshot() for step in history], last_error)
    if inspect.isawaitable(plan):
        return await plan
    return plan


def _call_key(step: Step) -> str:
    return dumps([step.tool_name, step.args], sort_keys=True)
