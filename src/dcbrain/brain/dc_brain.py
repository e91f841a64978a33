"""DCBrain: plan → run → validate → replan, as a state machine (seed 000).

The machine, declared below as data, mirrors the seed's diagram::

    init ──plan──▶ planning ──exec_plan──▶ running ──succeed──▶ succeeded
                    │  ▲  │                  │  │
                    │  │  └──succeed──▶ succeeded (direct answer)
                    │  └───────plan──────────┘  └──fail──▶ failed
                    └──fail──▶ failed (budget stops while planning)
    any state ──abort──▶ aborted        any state ──init──▶ init

Every run starts with ``init`` (from wherever the last run ended), so one instance runs
many questions one after another. ``abort`` and ``init`` from a terminal state are
allowed (the seed: "from any state"): they move the machine and change no finished
result. The FSM's ``abort`` event is fired by the run itself; the public :meth:`abort`
only requests it (and cancels the LLM call or plan in flight), from any task or thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from transitions import EventData
from transitions.extensions.asyncio import AsyncMachine

from dcbrain.brain.base import BaseBrain, EventCallback, answer_text
from dcbrain.brain.budget import TokenBudget, llm_phase
from dcbrain.brain.context import (
    BrainContext,
    BrainIntermediateResult,
    BrainReason,
    BrainResult,
    describe_value,
)
from dcbrain.brain.plan_diff import ScriptDiff, plan_calls
from dcbrain.brain.templates import (
    DEFAULT_PLANNING_TEMPLATE,
    DEFAULT_VALIDATE_TEMPLATE,
    QUESTION_TEMPLATE,
    VERDICT_SCHEMA,
)
from dcbrain.brain.trace import PlanCallEvents, RunRecorder
from dcbrain.chain import (
    AdditionalInfoPrompt,
    Chain,
    Chains,
    KnowledgePrompt,
    MemoPrompt,
    TFChainInterpreter,
)
from dcbrain.events import EventType
from dcbrain.exceptions import (
    TFBrainBusyError,
    TFBrainError,
    TFChainError,
    TFError,
    TFInterpreterError,
    TFLLMInterrupt,
    TFTokenBudgetExceeded,
    TFUserNewInputError,
)
from dcbrain.llm.base import ChatLLM
from dcbrain.llm.observe import llm_observer, observe_llm_calls
from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, MemoryChunkSize
from dcbrain.messages import TextMessage, as_message
from dcbrain.tfplan import Limits, extract_plan
from dcbrain.tools import Tool, ToolLike, as_tool

T = TypeVar("T")

#: Failed attempts kept per conversation for the next planning (seed 000).
CONTEXTUAL_PLAN_INFO_SIZE = 10

#: Errors of a plan run the brain recovers from by replanning (seed 000).
RECOVERABLE_ERRORS: tuple[type[Exception], ...] = (TFLLMInterrupt, TFInterpreterError, TFChainError)


class _AbortRequested(Exception):
    """Raised inside the run when :meth:`DCBrain.abort` was called."""


class _BrainMachine(AsyncMachine):
    """The brain's machine; the brain's own ``abort()`` method stays, the event is fired
    with ``trigger("abort")``."""

    def _checked_assignment(self, model: Any, name: str, func: Any) -> None:
        if name == "abort" and isinstance(model, DCBrain):
            return
        super()._checked_assignment(model, name, func)


class DCBrain(BaseBrain):
    """Plans in tf_plan, runs the plan, has the result validated, replans until solved.

    ``spec_chains`` are the chains a plan may call (by key), ``tools`` Python functions
    it may call (by name). ``default_plan_llm`` writes plans and ``default_validate_llm``
    judges results; both fall back to ``default_llm``, which also backs chains built by
    ``__construct_chain``. ``planning_prompt``/``validate_prompt`` replace the default
    templates (a str is a Jinja2 template). Budgets: ``max_iterations`` plannings,
    ``max_tokens`` for every LLM call of a run (checked before each call), ``timeout``
    seconds (checked before each new planning; a running plan is not interrupted;
    ``0`` plans exactly once). ``limits`` are the sandbox limits of each plan.

    One instance runs one question at a time (a second concurrent run raises
    :class:`~dcbrain.exceptions.TFBrainBusyError`); use one instance per concurrent run.
    """

    states: ClassVar[list[str]] = ["init", "planning", "running", "succeeded", "failed", "aborted"]
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
        trace_path: str | Path | None = None,
        neural: Any = None,
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
        if self.plan_llm is None or self.validate_llm is None:
            raise ValueError(
                "DCBrain needs default_llm (or both default_plan_llm and default_validate_llm)"
            )
        self.tools: list[Tool] = [as_tool(tool) for tool in tools]
        self.planning_prompt = _as_prompt(planning_prompt, DEFAULT_PLANNING_TEMPLATE, "system")
        self.validate_prompt = _as_prompt(validate_prompt, DEFAULT_VALIDATE_TEMPLATE, "user")
        # Prompts are stateless; compiling their templates once keeps planning cheap.
        self._memo_prompt = MemoPrompt()
        self._knowledge_prompt = KnowledgePrompt()
        self._question_prompt = AdditionalInfoPrompt(QUESTION_TEMPLATE)
        self.max_iterations = max_iterations
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.limits = limits
        self._contextual_plan_info: defaultdict[str, deque[dict[str, Any]]] = defaultdict(
            lambda: deque(maxlen=CONTEXTUAL_PLAN_INFO_SIZE)
        )
        self._run_lock = threading.Lock()
        self._control = threading.Lock()
        self._abort_requested = False
        self._inflight: asyncio.Future[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ir: BrainIntermediateResult | None = None
        self._budget: TokenBudget | None = None
        self._recorder: RunRecorder | None = None
        self._started = 0.0
        self.machine = _BrainMachine(
            model=self,
            states=self.states,
            transitions=self.transitions,
            initial="init",
            auto_transitions=False,
            send_event=True,
            before_state_change="emit_state_change",
        )
        if neural is not None:
            self.connect_to_neural(neural)

    # -- the three LLMs ----------------------------------------------------------------

    @property
    def plan_llm(self) -> ChatLLM | None:
        """The LLM that writes plans: ``default_plan_llm``, else ``default_llm``."""
        return self.default_plan_llm or self.default_llm

    @property
    def validate_llm(self) -> ChatLLM | None:
        """The LLM that judges results: ``default_validate_llm``, else ``default_llm``."""
        return self.default_validate_llm or self.default_llm

    def connect_to_neural(self, neural: Any) -> None:
        """Register spec_chains, the LLMs and memory with ``neural`` (seed 000)."""
        super().connect_to_neural(neural)
        for name, chain in self.spec_chains.items():
            neural.register("chain", name, chain)
        for name in ("default_llm", "default_plan_llm", "default_validate_llm"):
            llm = getattr(self, name)
            if llm is not None:
                neural.register("llm", name, llm)

    def contextual_plan_info(self, conversation_id: str) -> list[dict[str, Any]]:
        """The last failed attempts of a conversation, oldest first (at most 10)."""
        return list(self._contextual_plan_info.get(conversation_id, ()))

    # -- public control ----------------------------------------------------------------

    def abort(self) -> bool:
        """Stop the current run as soon as possible (status ``aborted``).

        Callable from any task or thread; the LLM call or plan in flight is cancelled.
        Returns ``False`` when no run is active.
        """
        with self._control:
            if self._ir is None:
                return False
            self._abort_requested = True
            inflight, loop = self._inflight, self._loop
        if inflight is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(inflight.cancel)
        return True

    @property
    def busy(self) -> bool:
        """Whether a run is in progress (``is_running()`` tells whether the state is running)."""
        return self._run_lock.locked()

    # -- a run -------------------------------------------------------------------------

    async def async_run(
        self,
        question: str | TextMessage,
        conversation_id: str = "default",
        *,
        on_event: EventCallback | None = None,
    ) -> BrainResult:
        """Answer ``question``; returns a :class:`BrainResult` on every stop but two.

        A timeout raises :class:`~dcbrain.exceptions.TFBrainError` whose ``result`` is the
        partial result (reason ``timeout``); new user input raises
        :class:`~dcbrain.exceptions.TFUserNewInputError` untouched.
        """
        if not self._run_lock.acquire(blocking=False):
            raise TFBrainBusyError(
                "this DCBrain instance is already running a question; one instance runs one "
                "question at a time — create one DCBrain per concurrent run"
            )
        try:
            return await self._run(question, conversation_id, on_event)
        finally:
            with self._control:
                self._ir = self._budget = None
                self._inflight = self._loop = None
                self._abort_requested = False
            self._run_lock.release()

    async def _run(
        self, question: str | TextMessage, conversation_id: str, on_event: EventCallback | None
    ) -> BrainResult:
        message = as_message(question)
        current_input = TextMessage(
            content=message.content,
            role=message.role,
            additional_kwargs=dict(message.additional_kwargs),
            created_at=message.created_at,
        )
        run_id = uuid.uuid4().hex
        subscribers = [*self._subscribers, *([on_event] if on_event else [])]
        recorder = RunRecorder(run_id, subscribers, trace_path=self.trace_path)
        budget = TokenBudget(
            self.max_tokens,
            emit=recorder.emit,
            parent=llm_observer.get(),
            max_iterations=self.max_iterations,
        )
        context = BrainContext(current_input, conversation_id, run_id, tools=list(self.tools))
        ir = BrainIntermediateResult(context)
        with self._control:
            self._ir, self._budget, self._recorder = ir, budget, recorder
            self._loop = asyncio.get_running_loop()
        self._started = time.monotonic()
        recorder.emit(
            EventType.RUN_STARTED,
            question=current_input.content,
            conversation_id=conversation_id,
            chains=sorted(self.spec_chains),
            tools=[tool.name for tool in self.tools],
            max_iterations=self.max_iterations,
            max_tokens=self.max_tokens,
            timeout=self.timeout,
        )
        try:
            await self.acommit_message(conversation_id, message)
            with observe_llm_calls(budget):
                await self._drive(ir)
        except BaseException as exc:
            recorder.emit(EventType.ERROR, source="brain", error=f"{type(exc).__name__}: {exc}")
            recorder.close()
            raise
        result = self._result(ir, budget, recorder)
        recorder.emit(EventType.FINAL, **result.to_dict(include_events=False))
        recorder.close()
        result.events = recorder.as_dicts()
        if result.reason == "timeout":
            raise TFBrainError(
                f"DCBrain timed out after {self.timeout:g} s and {ir.iterations} plannings",
                result=result,
            )
        return result

    async def _drive(self, ir: BrainIntermediateResult) -> None:
        """The loop of the seed's lifecycle; every stop ends in a terminal state."""
        try:
            await self._fire("init")
            while True:
                self._check_abort()
                if not await self._fire("plan"):
                    await self._stop(ir.reason or "error")
                    return
                self._check_abort()
                if ir.direct_answer:
                    await self._fire("succeed")
                    return
                if ir.current_plan is None:  # an unusable reply: plan again
                    continue
                await self._fire("exec_plan")
                self._check_abort()
                if self._budget is not None and self._budget.exhausted is not None:
                    await self._stop("max_tokens")
                    return
                if await self._fire("succeed"):
                    return
        except _AbortRequested:
            await self._stop("aborted")
        except TFUserNewInputError:
            raise
        except TFError as exc:
            exhausted = self._budget is not None and self._budget.exhausted is not None
            ir.error = f"{type(exc).__name__}: {exc}"
            await self._stop("max_tokens" if exhausted else "error")
        except Exception as exc:  # a bug in a chain, tool or callback: stop, keep the trajectory
            ir.error = f"{type(exc).__name__}: {exc}"
            await self._stop("error", unexpected=True)

    async def _fire(self, trigger: str, **kwargs: Any) -> bool:
        """Fire ``trigger``; the library swallows a cancellation of this task, so re-raise it."""
        done = await self.trigger(trigger, **kwargs)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        return bool(done)

    async def _stop(self, reason: BrainReason, *, unexpected: bool = False) -> None:
        if reason == "aborted" or unexpected or self.state not in ("planning", "running"):
            await self._fire("abort", reason=reason)
        else:
            await self._fire("fail", reason=reason)

    def _check_abort(self) -> None:
        if self._abort_requested:
            raise _AbortRequested

    async def _interruptible(self, phase: str, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` as a task :meth:`abort` can cancel; LLM calls are tagged ``phase``."""
        token = llm_phase.set(phase)
        try:
            task = asyncio.ensure_future(work)
        finally:
            llm_phase.reset(token)
        with self._control:
            self._inflight = task
            if self._abort_requested:
                task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._abort_requested and not (current is not None and current.cancelling()):
                raise _AbortRequested from None
            raise
        finally:
            with self._control:
                self._inflight = None

    # -- machine callbacks: events -----------------------------------------------------

    def emit_state_change(self, event: EventData) -> None:
        """Announce the change before the new state's ``on_enter`` work starts."""
        if self._recorder is not None and event.transition is not None:
            self._recorder.emit(
                EventType.STATE_CHANGED,
                source=event.transition.source,
                dest=event.transition.dest,
                trigger=event.event.name,
            )

    # -- machine callbacks: init -------------------------------------------------------

    async def on_enter_init(self, event: EventData) -> None:
        """Serialize the capability descriptions into ``current_input.additional_kwargs``."""
        ir = self._ir
        if ir is None:
            return
        info = ir.context.current_input.additional_kwargs
        described = self._interpreter(ir, observer=None).describe_callables()
        chains = [item for item in described if item["kind"] == "chain"]
        tools = [item for item in described if item["kind"] != "chain"]
        info["spec_chains"] = _json_lines(chains)
        info["tools"] = _json_lines(tools)
        info.update(
            contextual_plan_info=[],
            previous_suggestion="",
            memory_documents="",
            memory_keyword_hits="",
            max_iterations=self.max_iterations,
            max_tokens=self.max_tokens,
        )

    # -- machine callbacks: planning ---------------------------------------------------

    async def prepare_plan(self, event: EventData) -> None:
        """Recall memory, bring in the last suggestion, earlier failures and budgets."""
        ir, budget = self._ir, self._budget
        if ir is None or budget is None:
            return
        context = ir.context
        if self.neural is not None:
            self.neural.raise_if_new_input(context.conversation_id)
        if context.recall is None and self.memory is not None:
            recall = await self.arecall(context.conversation_id, context.current_input.content)
            if recall is not None:
                context.recall = recall
                context.conversation = list(recall.conversation)
                context.knowledge = [item.text for item in recall.knowledge]
                info = context.current_input.additional_kwargs
                info["memory_documents"] = recall.documents_text()
                info["memory_keyword_hits"] = recall.keyword_text()
        info = context.current_input.additional_kwargs
        info["previous_suggestion"] = ir.suggestion or ""
        info["contextual_plan_info"] = self.contextual_plan_info(context.conversation_id)
        info["iterations_left"] = max(self.max_iterations - ir.iterations, 0)
        info["tokens_left"] = budget.remaining

    def condition_plan(self, event: EventData) -> bool:
        """Another planning is allowed: iterations left and (after the first) time left."""
        ir = self._ir
        if ir is None:
            return False
        if ir.iterations >= self.max_iterations:
            ir.reason = "max_iterations"
            self._budget_stop("max_iterations", ir.iterations, self.max_iterations)
            return False
        elapsed = time.monotonic() - self._started
        if ir.iterations > 0 and elapsed >= self.timeout:
            ir.reason = "timeout"
            self._budget_stop("timeout", round(elapsed, 3), self.timeout)
            return False
        return True

    def before_plan(self, event: EventData) -> None:
        """Archive the previous plan and result; start a fresh attempt."""
        ir = self._ir
        if ir is None:
            return
        if ir.current_plan is not None or ir.interpreter_err is not None:
            record = ir.attempt_record()
            record["iteration"] = ir.iterations
            ir.intermediate_plans_and_results.append(record)
        ir.current_plan = None
        ir.current_result = None
        ir.interpreter_err = None
        ir.attempt_recorded = False

    async def on_enter_planning(self, event: EventData) -> None:
        """Run a freshly built plan chain; a ```tf_plan block is the plan, else the answer."""
        ir, budget = self._ir, self._budget
        if ir is None or budget is None:
            return
        if budget.exhausted is not None:
            raise budget.exhausted
        ir.iterations += 1
        budget.iterations_used = ir.iterations
        context = ir.context
        chain = self._plan_chain()
        reply = await self._interruptible(
            "plan",
            chain.async_run(context.current_input, context.conversation, context.knowledge),
        )
        text = reply.content if isinstance(reply.content, str) else answer_text(reply.content)
        plan = extract_plan(text)
        if plan is not None and plan.strip():
            self._new_plan(ir, plan)
        elif text.strip():
            ir.final_result = text.strip()
            ir.direct_answer = True
        else:
            ir.interpreter_err = TFChainError("the planner replied with nothing")
            self._record_attempt(ir)

    def _plan_chain(self) -> Chain:
        """A fresh plan chain: prompts cleared, then planning, memo, knowledge, the question."""
        assert self.plan_llm is not None
        chain = Chain(name="dcbrain_planner", llm=self.plan_llm, prompt=None,
                      description="writes tf_plan")
        chain.clear_prompts()
        chain.set_prompts(
            [self.planning_prompt, self._memo_prompt, self._knowledge_prompt,
             self._question_prompt]
        )
        chain.catch_intermediate_chain_result = False
        return chain

    def _new_plan(self, ir: BrainIntermediateResult, plan: str) -> None:
        assert self._recorder is not None
        previous = ir.plans[-1] if ir.plans else None
        ir.current_plan = plan
        ir.plans.append(plan)
        callables = [*self.spec_chains, *(tool.name for tool in self.tools)]
        if previous is None:
            self._recorder.emit(
                EventType.PLAN_CREATED,
                iteration=ir.iterations,
                revision=0,
                plan=plan,
                calls=[call.to_dict() for call in plan_calls(plan, callables)],
            )
            return
        diff = ScriptDiff.compute(previous, plan, callables=callables, revision=len(ir.plans) - 1)
        self._recorder.emit(
            EventType.PLAN_REVISED,
            iteration=ir.iterations,
            revision=diff.revision,
            plan=plan,
            previous_plan=previous,
            reason=ir.suggestion or (ir.last_error or ""),
            diff=diff.to_dict(),
            summary=diff.render(),
        )

    # -- machine callbacks: running ----------------------------------------------------

    def condition_exec_plan(self, event: EventData) -> bool:
        """There is a plan that has not run yet."""
        ir = self._ir
        return ir is not None and ir.current_plan is not None and ir.current_result is None \
            and ir.interpreter_err is None

    async def on_enter_running(self, event: EventData) -> None:
        """Check and run the plan; recoverable errors become ``interpreter_err``."""
        ir = self._ir
        if ir is None or ir.current_plan is None or self._recorder is None:
            return
        interpreter = self._interpreter(ir, PlanCallEvents(self._recorder, self.spec_chains))
        started = time.perf_counter()
        try:
            result = await self._interruptible("run", interpreter.aevaluate(ir.current_plan))
        except TFTokenBudgetExceeded:
            raise
        except RECOVERABLE_ERRORS as exc:
            ir.interpreter_err = exc
            ir.last_error = str(exc)
            problems = getattr(exc, "problems", None)
            self._recorder.emit(
                EventType.PLAN_FINISHED,
                iteration=ir.iterations,
                ok=False,
                error=str(exc),
                error_kind=getattr(exc, "kind", type(exc).__name__),
                problems=[str(problem) for problem in problems] if problems else [],
                stdout=getattr(exc, "stdout", ""),
                duration_s=time.perf_counter() - started,
            )
            return
        ir.current_result = result
        ir.last_result = result.value
        ir.last_error = None
        self._recorder.emit(
            EventType.PLAN_FINISHED,
            iteration=ir.iterations,
            ok=True,
            result=describe_value(result.value, 2000),
            stdout=result.stdout[-2000:],
            calls=len(result.trace),
            duration_s=time.perf_counter() - started,
        )

    def _interpreter(self, ir: BrainIntermediateResult, observer: Any) -> TFChainInterpreter:
        context = ir.context
        return TFChainInterpreter(
            self.spec_chains,
            tools=self.tools,
            additional_info=context.current_input.additional_kwargs,
            limits=self.limits,
            default_llm=self.default_llm,
            conversation=context.conversation,
            knowledge=context.knowledge,
            observer=observer,
            neural=self.neural,
            conversation_id=context.conversation_id,
        )

    # -- machine callbacks: validation -------------------------------------------------

    async def condition_succeed(self, event: EventData) -> bool:
        """A direct answer, or a plan result the validator accepts."""
        ir = self._ir
        if ir is None or self._recorder is None:
            return False
        if ir.direct_answer:
            ir.reason = "direct_answer"
            return True
        if ir.interpreter_err is not None or ir.current_result is None:
            self._record_attempt(ir)
            return False
        if self.neural is not None:
            self.neural.raise_if_new_input(ir.context.conversation_id)
        is_solved, suggestion, parse_error = await self._validate(ir)
        self._recorder.emit(
            EventType.VALIDATION,
            iteration=ir.iterations,
            is_solved=is_solved,
            suggestion=suggestion,
            parse_error=parse_error,
        )
        if is_solved:
            ir.final_result = _answer_of(ir)
            ir.reason = "validated"
            return True
        ir.suggestion = suggestion
        ir.suggestions.append(suggestion)
        self._record_attempt(ir)
        return False

    async def _validate(self, ir: BrainIntermediateResult) -> tuple[bool, str, str | None]:
        """The validator's verdict; a malformed one is "not solved" with the parse error."""
        assert self.validate_llm is not None and ir.current_result is not None
        chain = Chain(
            name="dcbrain_validator",
            llm=self.validate_llm,
            prompt=[self.validate_prompt],
            output_json_schema=VERDICT_SCHEMA,
            catch_intermediate_chain_result=False,
        )
        result = ir.current_result
        message = TextMessage(
            content=ir.context.current_input.content,
            additional_kwargs={
                "plan": ir.current_plan or "",
                "plan_result": describe_value(result.value),
                "plan_output": result.stdout[-4000:],
            },
        )
        try:
            verdict = await self._interruptible("validate", chain.async_run(message))
        except TFChainError as exc:
            error = f"the validator's verdict could not be parsed: {exc}"
            return False, error, str(exc)
        content = verdict.content
        if not isinstance(content, dict) or not isinstance(content.get("is_solved"), bool):
            error = f"the validator's verdict could not be parsed: {content!r}"
            return False, error, error
        suggestion = content.get("suggestion")
        return content["is_solved"], suggestion if isinstance(suggestion, str) else "", None

    # -- machine callbacks: terminal states --------------------------------------------

    async def on_enter_succeeded(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "succeeded"
        self._contextual_plan_info.pop(ir.context.conversation_id, None)
        await self._commit_answer(ir, answer_text(ir.final_result))

    async def on_enter_failed(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "failed"
        ir.reason = event.kwargs.get("reason", ir.reason or "error")
        self._record_attempt(ir)
        detail = ir.error or ir.suggestion or ir.last_error or ""
        await self._commit_answer(ir, f"(no answer: {ir.reason}) {detail}".strip())

    async def on_enter_aborted(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "aborted"
        ir.reason = event.kwargs.get("reason", "aborted")
        self._record_attempt(ir)

    async def _commit_answer(self, ir: BrainIntermediateResult, text: str) -> None:
        assert ir.status is not None
        await self.acommit_message(
            ir.context.conversation_id,
            TextMessage(
                content=text,
                role="assistant",
                additional_kwargs={"run_id": ir.context.run_id, "status": ir.status,
                                   "reason": ir.reason},
            ),
        )

    # -- helpers -----------------------------------------------------------------------

    def _record_attempt(self, ir: BrainIntermediateResult) -> None:
        """Remember a failed attempt for the next planning of this conversation (once)."""
        if ir.attempt_recorded or (ir.current_plan is None and ir.interpreter_err is None):
            return
        ir.attempt_recorded = True
        self._contextual_plan_info[ir.context.conversation_id].append(ir.attempt_record())

    def _budget_stop(self, budget: str, used: float, limit: float) -> None:
        if self._recorder is not None:
            self._recorder.emit(EventType.BUDGET, budget=budget, used=used, limit=limit,
                                exhausted=True)

    def _result(
        self, ir: BrainIntermediateResult, budget: TokenBudget, recorder: RunRecorder
    ) -> BrainResult:
        status = ir.status or "aborted"
        reason = ir.reason or "error"
        return BrainResult(
            status=status,
            reason=reason,
            final_result=ir.final_result if status == "succeeded" else None,
            plans=list(ir.plans),
            last_result=ir.last_result,
            suggestions=list(ir.suggestions),
            usage=budget.usage.copy(),
            events=[],
            conversation_id=ir.context.conversation_id,
            run_id=ir.context.run_id,
            iterations=ir.iterations,
            error=ir.error,
            last_error=ir.last_error,
            duration_s=time.monotonic() - self._started,
        )


def _as_prompt(
    prompt: str | AdditionalInfoPrompt | None, default: str, role: str
) -> AdditionalInfoPrompt:
    if prompt is None:
        return AdditionalInfoPrompt(default, role=role)
    if isinstance(prompt, str):
        return AdditionalInfoPrompt(prompt, role=role)
    return prompt


def _json_lines(items: list[dict[str, Any]]) -> str:
    """One JSON object per line: compact for the prompt, still readable."""
    if not items:
        return "(none)"
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items)


def _answer_of(ir: BrainIntermediateResult) -> Any:
    """The final result of a validated plan: its value, else what it printed."""
    result = ir.current_result
    if result is None:
        return None
    if result.value is not None:
        return result.value
    return result.stdout.strip() or None
