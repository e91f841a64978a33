"""DCBrain: plan → run → validate → replan, as a state machine.

A :class:`DCBrain` is configuration: the chains and tools plans may call, the three LLMs,
prompts, memory and budgets. Each question becomes a :class:`~dcbrain.brain.run.BrainRun`
(the state machine's model, with its own attempts, budget, events, clock and call
journal), so one brain runs any number of questions at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from dcbrain._sync import run_sync
from dcbrain.approvals import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    ApprovalBoard,
    ApprovalDecision,
    ApprovalHandler,
    ApprovalRequest,
)
from dcbrain.brain.base import BaseBrain, EventCallback
from dcbrain.brain.context import BrainResult, ContextualPlanInfo
from dcbrain.brain.deps import AttemptStore, Resumption, RunDeps
from dcbrain.brain.eager import served_chains, served_tools
from dcbrain.brain.output import OutputType
from dcbrain.brain.planner import Planner, TemplatePlanner
from dcbrain.brain.planning import as_prompt
from dcbrain.brain.run import BrainRun
from dcbrain.brain.templates import (
    DEFAULT_PLANNING_TEMPLATE,
    DEFAULT_VALIDATE_TEMPLATE,
    QUESTION_TEMPLATE,
)
from dcbrain.brain.validation import validator_chain
from dcbrain.chain import (
    AdditionalInfoPrompt,
    Chain,
    Chains,
    KnowledgePrompt,
    MemoPrompt,
    PlanCallables,
    check_plan_names,
)
from dcbrain.events import Event
from dcbrain.exceptions import RunSuspended, TFBrainBusyError, TFBrainError
from dcbrain.journal import CallJournal
from dcbrain.llm.base import ChatLLM
from dcbrain.llm.tokens import cl100k_base
from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, MemoryChunkSize
from dcbrain.memory.run_store import RunStore
from dcbrain.messages import TextMessage, as_message
from dcbrain.policies import (
    Policy,
    PolicyMode,
    Violation,
    checked_mode,
    checked_policies,
    checked_violation,
)
from dcbrain.tfplan import Interpreter, Limits
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool, ToolLike, as_tool, checked_timeout
from dcbrain.usage import Usage

#: Why a run that returned ``waiting`` executes again.
APPROVALS_DECIDED = "the calls the run waited for were decided"


class RunsInProgress(list[BrainRun]):
    """A snapshot of a brain's runs in progress; calling it gives the same list."""

    def __call__(self) -> list[BrainRun]:
        return list(self)


@dataclass(frozen=True)
class _Suspended:
    """A run that returned ``waiting``: what its next execution goes on from."""

    question: TextMessage
    conversation_id: str
    deps: RunDeps
    output_type: Any
    events: list[dict[str, Any]]
    usage: Usage
    duration_s: float
    execution: int


class DCBrain(BaseBrain):
    """Plans in tf_plan, runs the plan, has the result validated, replans until solved.

    ``spec_chains`` are the chains a plan may call (by key), ``tools`` Python functions
    it may call (by name). ``default_plan_llm`` writes plans and ``default_validate_llm``
    judges results; both fall back to ``default_llm``, which also backs chains built by
    ``__construct_chain``. ``planning_prompt``/``validate_prompt`` replace the default
    templates (a str is a Jinja2 template). Budgets: ``max_iterations`` plannings,
    ``max_tokens`` for every LLM call of a run (checked before each call), ``timeout``
    seconds (checked before each new planning; a running plan is not interrupted;
    ``0`` plans exactly once; a timeout raises :class:`~dcbrain.exceptions.TFBrainError`
    holding the partial result unless ``raise_on_timeout=False``, which returns it like
    every other budget stop). ``limits`` are the sandbox limits of each plan; ``isolation``
    says where plans run (``"process"``: sandbox worker processes, the default;
    ``"inprocess"``: trusted plans, faster). A reply with no plan is the answer as it is;
    with ``validate_direct_answers`` the validator judges it too, and a rejected one is
    planned again. ``planner`` writes the plans (default: the planning template sent to
    the plan LLM; see :mod:`dcbrain.brain.planner`). ``output_type`` (a pydantic model or
    any type pydantic validates) is the type of ``BrainResult.output``: an answer that does
    not fit is sent back to the planner. A call of a tool or chain declared
    ``requires_approval`` waits for :meth:`approve` or :meth:`deny` (on ``approvals``, an
    :class:`~dcbrain.approvals.ApprovalBoard` of its own by default), at most
    ``approval_timeout_s`` seconds (default 24 h; a tool's own ``approval_timeout_s``
    wins), after which it is denied; waiting does not count against ``timeout``.
    ``policies`` (functions of a :class:`~dcbrain.policies.PolicyCall`) are checked before
    every call of a tool or chain with side effects, after the tool's own
    (``trusted_args``, ``policies``); ``policy_mode`` is ``"off"``, ``"enforce"`` (plan
    values carry their sources) or ``"strict"`` (also the conditions a call was made
    under); default: ``"enforce"`` once a policy is declared anywhere, else ``"off"``.
    ``on_approval`` (sync or async) sees every approval request as it opens and answers
    ``True``/``False``/``(approved, reason)``, or ``None`` to leave it pending for
    :meth:`approve`/:meth:`deny`; one that raises is reported on the run (an ``error``
    event, the log) and the request stays pending.
    ``on_violation="ask"`` puts a call whose ``trusted_args`` carry untrusted data ("pay
    the bill in this file") to a person, as an approval request naming the argument and
    its sources, instead of refusing it (``"deny"``, the default); a tool's own
    ``on_violation`` wins.
    ``show_untrusted_to_planner=False`` puts a typed placeholder (type, length, source) in
    place of untrusted data in planning prompts (earlier results and errors, the calls that
    already succeeded, recalled answers and documents); by default the planner sees it, and
    the run records which sources it saw (``PlanningContext.untrusted_sources_shown``).
    ``eager`` starts a plan's calls of read-only tools (``side_effects=False``) while the
    planner is still writing the plan (see :mod:`dcbrain.brain.eager`); calls with side
    effects still wait for the whole plan and its check. Default: on when the plan LLM
    streams.

    One instance runs any number of questions at once, each as its own
    :class:`~dcbrain.brain.run.BrainRun`; only two runs of the same conversation (or with
    the same ``run_id``) at once raise :class:`~dcbrain.exceptions.TFBrainBusyError`,
    since a conversation's memory and failed attempts are written in order.
    """

    #: The lifecycle's states every run goes through (see :mod:`dcbrain.brain.steps`).
    states: ClassVar[list[str]] = BrainRun.states

    def __init__(
        self,
        spec_chains: Mapping[str, Chain | Chains] | None = None,
        default_llm: ChatLLM | None = None,
        default_plan_llm: ChatLLM | None = None,
        default_validate_llm: ChatLLM | None = None,
        tools: Sequence[ToolLike] = (),
        planning_prompt: str | AdditionalInfoPrompt | None = None,
        validate_prompt: str | AdditionalInfoPrompt | None = None,
        memory: Any = None,
        memory_chunk_size: MemoryChunkSize = DEFAULT_MEMORY_CHUNK_SIZE,
        max_iterations: int = 10,
        max_tokens: int = 128_000,
        timeout: float = 1200,
        limits: Limits | None = None,
        isolation: Isolation = "process",
        trace_path: str | Path | None = None,
        neural: Any = None,
        raise_on_timeout: bool = True,
        validate_direct_answers: bool = False,
        planner: Planner | None = None,
        output_type: Any = None,
        approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S,
        approvals: ApprovalBoard | None = None,
        policies: Sequence[Policy] = (),
        policy_mode: PolicyMode | None = None,
        show_untrusted_to_planner: bool = True,
        on_violation: Violation = "deny",
        on_approval: ApprovalHandler | None = None,
        eager: bool | None = None,
    ) -> None:
        super().__init__(memory=memory, memory_chunk_size=memory_chunk_size, trace_path=trace_path)
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if timeout < 0:
            raise ValueError("timeout must be >= 0 seconds")
        self.spec_chains: dict[str, Chain | Chains] = dict(spec_chains or {})
        self.default_llm = default_llm
        self.default_plan_llm = default_plan_llm
        self.default_validate_llm = default_validate_llm
        if (self.plan_llm is None and planner is None) or self.validate_llm is None:
            raise ValueError("DCBrain needs default_llm (or both default_validate_llm and "
                             "default_plan_llm or a planner)")
        self.tools: list[Tool] = [as_tool(tool) for tool in tools]
        check_plan_names(self.spec_chains, self.tools)
        self.planning_prompt = as_prompt(planning_prompt, DEFAULT_PLANNING_TEMPLATE, "system")
        self.validate_prompt = as_prompt(validate_prompt, DEFAULT_VALIDATE_TEMPLATE, "user")
        # Prompts are stateless; compiling their templates once keeps planning cheap.
        self._memo_prompt = MemoPrompt()
        self._knowledge_prompt = KnowledgePrompt()
        self._question_prompt = AdditionalInfoPrompt(QUESTION_TEMPLATE)
        self.planner: Planner = planner or self._template_planner()
        self.output_type = output_type
        self._output_type = OutputType(output_type) if output_type is not None else None
        self.max_iterations = max_iterations
        self.validate_direct_answers = validate_direct_answers
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.limits = limits
        self.isolation: Isolation = isolation
        self.policies = checked_policies(policies, "DCBrain")
        self.policy_mode = checked_mode(policy_mode)
        self.on_violation: Violation = checked_violation(on_violation, "DCBrain") or "deny"
        self.raise_on_timeout = raise_on_timeout
        self.approval_timeout_s = checked_timeout(approval_timeout_s, "DCBrain",
                                                  "approval_timeout_s") \
            or DEFAULT_APPROVAL_TIMEOUT_S
        #: Where this brain's runs wait for decisions unless a run brings its own desk
        #: (``RunDeps.approvals``): :meth:`approve` and :meth:`deny` decide there.
        self.approvals = approvals if approvals is not None else ApprovalBoard()
        if on_approval is not None and not callable(on_approval):
            raise TypeError(f"DCBrain: on_approval must be a function of an ApprovalRequest, "
                            f"not {type(on_approval).__name__}")
        self.on_approval = on_approval
        #: Runs that returned ``waiting`` (``wait_for_approvals=False``), by run id.
        self._suspended: dict[str, _Suspended] = {}
        self.show_untrusted_to_planner = show_untrusted_to_planner
        self._eager = eager
        # Without a store given per run: kept in the memory's file when it is also a run
        # store (other processes see them), else in this process.
        store = self.memory if isinstance(self.memory, RunStore) else None
        self._contextual_plan_info = ContextualPlanInfo(store=store)
        self._runs_lock = threading.Lock()
        self._runs: dict[str, BrainRun] = {}
        if neural is not None:
            self.connect_to_neural(neural)

    @property
    def eager(self) -> bool:
        """Whether plans' read-only calls start while the plan is written: as set, else
        whether the plan LLM streams."""
        if self._eager is not None:
            return self._eager
        return bool(getattr(self.plan_llm, "stream", False))

    @eager.setter
    def eager(self, value: bool | None) -> None:
        self._eager = value

    # -- the three LLMs ----------------------------------------------------------------

    @property
    def plan_llm(self) -> ChatLLM | None:
        """The LLM that writes plans: ``default_plan_llm``, else ``default_llm``."""
        return self.default_plan_llm or self.default_llm

    @property
    def validate_llm(self) -> ChatLLM | None:
        """The LLM that judges results: ``default_validate_llm``, else ``default_llm``."""
        return self.default_validate_llm or self.default_llm

    def _template_planner(self) -> TemplatePlanner:
        assert self.plan_llm is not None
        return TemplatePlanner(self.plan_llm, [self.planning_prompt, self._memo_prompt,
                                               self._knowledge_prompt, self._question_prompt])

    def validator_chain(self) -> Chain:
        """The validator's chain (:attr:`validate_llm` judging with :attr:`validate_prompt`):
        made once, and again only when one of the two is replaced."""
        made = self.__dict__.get("_validator_chain")
        llm, prompt = self.validate_llm, self.validate_prompt
        if made is None or made[0] is not llm or made[1] is not prompt:
            assert llm is not None
            made = (llm, prompt, validator_chain(llm, prompt))
            self.__dict__["_validator_chain"] = made
        return made[2]

    def plan_callables(self) -> PlanCallables:
        """The chains and tools this brain's plans call, with their specs: made once, and
        again only when one of the brain's chains, tools, limits or policies is replaced."""
        made = self.__dict__.get("_plan_callables")
        basis = (*self.spec_chains, *self.spec_chains.values(), *self.tools, self.limits,
                 self.default_llm, self.isolation, self.policies, self.policy_mode,
                 self.on_violation, self.eager)
        if made is not None and len(made[0]) == len(basis) \
                and all(a is b for a, b in zip(made[0], basis, strict=True)):
            return made[1]  # type: ignore[no-any-return]
        callables = PlanCallables(
            served_chains(self), tools=served_tools(self), limits=self.limits,
            default_llm=self.default_llm, isolation=self.isolation, policies=self.policies,
            policy_mode=self.policy_mode, flow_check=self.policy_mode != "off",
            on_violation=self.on_violation)
        self.__dict__["_plan_callables"] = (basis, callables)
        return callables

    def warm_up(self) -> None:
        """Load now what a first run would load lazily, so that it is as quick as the next.

        The LLM providers' SDK parts, the tokenizer, and (``isolation="process"``) the plan
        sandbox's worker processes: most of a second in a fresh process. Servers and
        workers call it at start.
        """
        llms = {id(llm): llm for llm in (self.plan_llm, self.validate_llm) if llm is not None}
        for llm in llms.values():
            llm.warm_up()
        cl100k_base()
        if self.isolation == "process":
            Interpreter(isolation="process", limits=self.limits).run("None")

    def connect_to_neural(self, neural: Any) -> None:
        """Register spec_chains, the LLMs and memory with ``neural``."""
        super().connect_to_neural(neural)
        for name, chain in self.spec_chains.items():
            neural.register("chain", name, chain)
        for name in ("default_llm", "default_plan_llm", "default_validate_llm"):
            llm = getattr(self, name)
            if llm is not None:
                neural.register("llm", name, llm)

    def contextual_plan_info(self, conversation_id: str) -> list[dict[str, Any]]:
        """The last failed attempts of a conversation, oldest first (at most 10)."""
        return self._contextual_plan_info.of(conversation_id)

    def failed_attempts(self, store: AttemptStore | None) -> ContextualPlanInfo:
        """Where a run keeps its conversation's failed attempts: ``store`` when given."""
        if store is None:
            return self._contextual_plan_info
        return ContextualPlanInfo(store=store)

    # -- runs ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def start_run(self, question: str | TextMessage, conversation_id: str = "default", *,
                        run_id: str | None = None, deps: RunDeps | None = None,
                        output_type: Any = None,
                        wait_for_approvals: bool = True) -> AsyncIterator[BrainRun]:
        """A new run of ``question``, registered with this brain while the block runs::

            async with brain.start_run("question", "c1") as run:
                result = await run.execute()   # run.abort() from anywhere meanwhile

        Useful where the caller needs the run (its id, :meth:`BrainRun.abort`) before it
        starts. ``deps`` are the run's own dependencies (:class:`RunDeps`). Unlike
        :meth:`async_run`, :meth:`BrainRun.execute` returns a timeout's result.
        """
        run = BrainRun(self, question, conversation_id, run_id=run_id, deps=deps,
                       output_type=output_type, wait_for_approvals=wait_for_approvals)
        with self._runs_lock:
            for other in self._runs.values():
                if other.run_id == run.run_id or other.conversation_id == conversation_id:
                    raise TFBrainBusyError(
                        f"conversation {conversation_id!r} already has a run in progress on "
                        f"this DCBrain ({other.run_id}); runs of one conversation go one at "
                        "a time (other conversations may run concurrently)"
                    )
            self._runs[run.run_id] = run
        try:
            yield run
        finally:
            try:  # whoever gets past the block has seen every event the run emitted
                await run.recorder.delivered()
            finally:
                with self._runs_lock:
                    self._runs.pop(run.run_id, None)

    async def async_run(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        on_event: EventCallback | None = None,
        run_id: str | None = None,
        deps: RunDeps | None = None,
        output_type: Any = None,
        wait_for_approvals: bool = True,
    ) -> BrainResult:
        """Answer ``question``; returns a :class:`BrainResult` on every stop but two.

        ``run_id`` names the run (default: a new id); ``on_event`` sees this run's events;
        ``deps`` are its own dependencies (:class:`RunDeps`: memory, failed-attempt store,
        journal, clock, input mailbox, subscribers); ``output_type`` replaces the brain's
        for this run. A timeout raises :class:`~dcbrain.exceptions.TFBrainError` whose
        ``result`` is the partial result (reason ``timeout``) unless the brain has
        ``raise_on_timeout=False``; new user input raises
        :class:`~dcbrain.exceptions.TFUserNewInputError` untouched.

        ``wait_for_approvals=False``: when calls of its plan need a person's decision the
        run returns at once, ``status="waiting"`` with the ``pending_approvals``; decide
        them (:meth:`approve`/:meth:`deny`), then :meth:`aresume` it by ``run_id`` (or
        call this again with the same question and ``run_id``).
        """
        if run_id is not None and run_id in self._suspended:
            held = self._suspended[run_id]
            if as_message(question).content != held.question.content:
                raise TFBrainError(
                    f"run {run_id} waits for decisions on its calls (it asked "
                    f"{held.question.content[:80]!r}): resume it with brain.aresume("
                    f"{run_id!r}), or give another run_id for another question")
            return await self.aresume(run_id, on_event=on_event,
                                      wait_for_approvals=wait_for_approvals)
        deps = deps if deps is not None else RunDeps()
        return await self._execute(question, conversation_id, run_id, deps, on_event,
                                   output_type, wait_for_approvals, [], 1)

    def run(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        run_id: str | None = None,
        output_type: Any = None,
        wait_for_approvals: bool = True,
    ) -> BrainResult:
        """Blocking :meth:`async_run`; usable with or without a running event loop."""
        return run_sync(lambda: self.async_run(question, conversation_id, run_id=run_id,
                                               output_type=output_type,
                                               wait_for_approvals=wait_for_approvals))

    async def astream(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        run_id: str | None = None,
        output_type: Any = None,
    ) -> AsyncIterator[Event]:
        """Run ``question`` and yield its :class:`~dcbrain.events.Event` objects live.

        The last event is ``final`` (its data is the result without the events). If the
        run raises (a timeout's :class:`~dcbrain.exceptions.TFBrainError`, new user
        input), the error is raised after the events that came before it. Leaving the
        loop early cancels the run.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        def deliver(event: Event) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        task = asyncio.ensure_future(
            self.async_run(question, conversation_id, on_event=deliver, run_id=run_id,
                           output_type=output_type)
        )
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def aresume(self, run_id: str, *, on_event: EventCallback | None = None,
                      wait_for_approvals: bool = True) -> BrainResult:
        """Go on with run ``run_id``, which returned ``waiting``, once its calls are
        decided: its plan runs again from the run's journal (no call is made twice, the
        planner is not asked again). A call still undecided is waited for (or, with
        ``wait_for_approvals=False``, the run returns ``waiting`` again). Its result tells
        every execution: their events, usage and duration."""
        held = self._suspended.pop(run_id, None)
        if held is None:
            raise TFBrainError(f"no run {run_id} waits to be resumed on this DCBrain (only "
                               "a run that returned status 'waiting' can be)")
        decided = frozenset(str(event.get("call_id")) for event in held.events
                            if event.get("type") == "approval_decided")
        deps = replace(held.deps, resumed=Resumption(
            execution=held.execution + 1, reason=APPROVALS_DECIDED,
            first_seq=len(held.events), usage=held.usage, duration_s=held.duration_s,
            decided=decided, question_kept=True))
        try:
            return await self._execute(held.question, held.conversation_id, run_id, deps,
                                       on_event, held.output_type, wait_for_approvals,
                                       held.events, held.execution + 1)
        except BaseException:
            self._suspended.setdefault(run_id, held)  # still resumable
            raise

    def resume(self, run_id: str, *, wait_for_approvals: bool = True) -> BrainResult:
        """Blocking :meth:`aresume`; usable with or without a running event loop."""
        return run_sync(lambda: self.aresume(run_id, wait_for_approvals=wait_for_approvals))

    async def _execute(self, question: str | TextMessage, conversation_id: str,
                       run_id: str | None, deps: RunDeps, on_event: EventCallback | None,
                       output_type: Any, wait_for_approvals: bool,
                       earlier: list[dict[str, Any]], execution: int) -> BrainResult:
        """One execution of a run; a run that returned ``waiting`` is kept to resume."""
        if deps.journal is None:  # kept for a resumption, should the run return waiting
            deps = replace(deps, journal=CallJournal())
        async with self.start_run(question, conversation_id, run_id=run_id,
                                  deps=deps.with_subscriber(on_event),
                                  output_type=output_type,
                                  wait_for_approvals=wait_for_approvals) as run:
            try:
                result = await run.execute()
            except RunSuspended:
                if not run.suspended:
                    raise  # a desk of its own ended this execution (a durable run's)
                return self._waiting(run, deps, output_type, earlier, execution)
        if earlier:
            result.events = [*earlier, *result.events]
        self.approvals.close(result.run_id)
        if result.reason == "timeout" and self.raise_on_timeout:
            raise TFBrainError(
                f"DCBrain timed out after {self.timeout:g} s and {result.iterations} plannings",
                result=result,
            )
        return result

    def _waiting(self, run: BrainRun, deps: RunDeps, output_type: Any,
                 earlier: list[dict[str, Any]], execution: int) -> BrainResult:
        """The ``waiting`` result of ``run``, kept to be resumed."""
        usage = run.budget.usage.copy()
        duration_s = run.elapsed
        if run.resumed is not None:
            usage = usage + run.resumed.usage
            duration_s += run.resumed.duration_s
        result = BrainResult.from_intermediate(run.ir, usage, duration_s)
        result.status, result.reason = "waiting", "approval"
        result.pending_approvals = list(run.suspended)
        result.events = [*earlier, *run.recorder.as_dicts()]
        self._suspended[run.run_id] = _Suspended(
            run.message, run.conversation_id, replace(deps, resumed=None), output_type,
            result.events, usage, duration_s, execution)
        return result

    @property
    def runs(self) -> RunsInProgress:
        """The runs in progress (each with its ``state``: ``planning``, ``running``,
        ``waiting``, …); ``brain.runs()`` reads the same."""
        with self._runs_lock:
            return RunsInProgress(self._runs.values())

    def abort(self, run_id: str | None = None) -> bool:
        """Stop run ``run_id`` (every run in progress when ``None``) as soon as possible.

        Callable from any task or thread; the LLM call or plan in flight is cancelled.
        Returns ``False`` when no such run is in progress.
        """
        with self._runs_lock:
            runs = [run for run in self._runs.values() if run_id in (None, run.run_id)]
        aborted = [run.abort() for run in runs]
        return any(aborted)

    # -- approvals -----------------------------------------------------------------------

    def pending_approvals(self, run_id: str | None = None) -> list[ApprovalRequest]:
        """The requests runs of this brain wait on (of run ``run_id`` only, if given)."""
        return [request for _, request in self.approvals.pending(run_id)]

    async def approve(self, run_id: str, call_id: str, *, args_hash: str | None = None,
                      by: str = "user") -> ApprovalDecision:
        """Approve the call ``call_id`` run ``run_id`` waits on: it runs. With ``args_hash``
        (the request's), only if the call still has those arguments. Raises
        :class:`~dcbrain.exceptions.TFApprovalError` for an unknown or decided call."""
        return self.approve_sync(run_id, call_id, args_hash=args_hash, by=by)

    async def deny(self, run_id: str, call_id: str, *, reason: str = "",
                   args_hash: str | None = None, by: str = "user") -> ApprovalDecision:
        """Deny the call: it raises :class:`~dcbrain.tfplan.TFApprovalDenied` at its plan
        line and the planner, told ``denied by the user: <reason>``, plans again."""
        return self.deny_sync(run_id, call_id, reason=reason, args_hash=args_hash, by=by)

    def approve_sync(self, run_id: str, call_id: str, *, args_hash: str | None = None,
                     by: str = "user") -> ApprovalDecision:
        """:meth:`approve` from any thread, without an event loop."""
        return self.approvals.decide(run_id, call_id, approved=True, by=by,
                                     args_hash=args_hash)

    def deny_sync(self, run_id: str, call_id: str, *, reason: str = "",
                  args_hash: str | None = None, by: str = "user") -> ApprovalDecision:
        """:meth:`deny` from any thread, without an event loop."""
        return self.approvals.decide(run_id, call_id, approved=False, reason=reason, by=by,
                                     args_hash=args_hash)

    @property
    def busy(self) -> bool:
        """Whether any run is in progress."""
        with self._runs_lock:
            return bool(self._runs)
