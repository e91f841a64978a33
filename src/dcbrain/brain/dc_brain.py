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
The work of each phase lives in its own module (``planning``, ``running``, ``validation``);
stopping a run in ``control``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from transitions import EventData

from dcbrain.brain.base import BaseBrain, EventCallback, answer_text
from dcbrain.brain.budget import TokenBudget
from dcbrain.brain.context import (
    BrainContext,
    BrainIntermediateResult,
    BrainReason,
    BrainResult,
    ContextualPlanInfo,
)
from dcbrain.brain.control import AbortRequested, BrainMachine, RunControl
from dcbrain.brain.planning import as_prompt, ask_planner, write_planning_context, write_recall
from dcbrain.brain.running import run_plan
from dcbrain.brain.templates import (
    DEFAULT_PLANNING_TEMPLATE,
    DEFAULT_VALIDATE_TEMPLATE,
    QUESTION_TEMPLATE,
)
from dcbrain.brain.trace import PlanCallEvents, RunRecorder
from dcbrain.brain.validation import validate
from dcbrain.chain import (
    AdditionalInfoPrompt,
    Chain,
    Chains,
    KnowledgePrompt,
    MemoPrompt,
    TFChainInterpreter,
)
from dcbrain.events import EventType
from dcbrain.exceptions import TFBrainBusyError, TFBrainError, TFError, TFUserNewInputError
from dcbrain.llm.base import ChatLLM
from dcbrain.llm.observe import llm_observer, observe_llm_calls
from dcbrain.memory.recall import DEFAULT_MEMORY_CHUNK_SIZE, MemoryChunkSize
from dcbrain.memory.run_store import RunStore
from dcbrain.messages import TextMessage, as_message
from dcbrain.tfplan import Limits
from dcbrain.tools import Tool, ToolLike, as_tool


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
        self.planning_prompt = as_prompt(planning_prompt, DEFAULT_PLANNING_TEMPLATE, "system")
        self.validate_prompt = as_prompt(validate_prompt, DEFAULT_VALIDATE_TEMPLATE, "user")
        # Prompts are stateless; compiling their templates once keeps planning cheap.
        self._memo_prompt = MemoPrompt()
        self._knowledge_prompt = KnowledgePrompt()
        self._question_prompt = AdditionalInfoPrompt(QUESTION_TEMPLATE)
        self.max_iterations = max_iterations
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.limits = limits
        # Kept in the memory's file when it is also a run store: other processes see them.
        store = self.memory if isinstance(self.memory, RunStore) else None
        self._contextual_plan_info = ContextualPlanInfo(store=store)
        self._run_lock = threading.Lock()
        self._control = RunControl()
        self._ir: BrainIntermediateResult | None = None
        self._budget: TokenBudget | None = None
        self._recorder: RunRecorder | None = None
        self._plan_calls: PlanCallEvents | None = None
        self._started = 0.0
        self.machine = BrainMachine(
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
        return self._contextual_plan_info.of(conversation_id)

    # -- public control ----------------------------------------------------------------

    def abort(self) -> bool:
        """Stop the current run as soon as possible (status ``aborted``).

        Callable from any task or thread; the LLM call or plan in flight is cancelled.
        Returns ``False`` when no run is active.
        """
        return self._control.request_abort()

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
            self._control.finish()
            self._ir = self._budget = None
            self._run_lock.release()

    async def _run(
        self, question: str | TextMessage, conversation_id: str, on_event: EventCallback | None
    ) -> BrainResult:
        message = as_message(question)
        run_id = uuid.uuid4().hex
        subscribers = [*self._subscribers, *([on_event] if on_event else [])]
        recorder = RunRecorder(run_id, subscribers, trace_path=self.trace_path)
        budget = TokenBudget(
            self.max_tokens,
            emit=recorder.emit,
            parent=llm_observer.get(),
            max_iterations=self.max_iterations,
        )
        context = BrainContext.for_question(message, conversation_id, run_id, list(self.tools))
        ir = BrainIntermediateResult(context)
        self._ir, self._budget, self._recorder = ir, budget, recorder
        # one observer for every plan of the run, so call ids stay unique in the run
        self._plan_calls = PlanCallEvents(recorder, self.spec_chains)
        self._control.start(asyncio.get_running_loop())
        self._started = time.monotonic()
        recorder.emit(
            EventType.RUN_STARTED,
            question=message.content,
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
        result = BrainResult.from_intermediate(
            ir, budget.usage.copy(), time.monotonic() - self._started
        )
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
                self._control.check()
                if not await self._fire("plan"):
                    await self._stop(ir.reason or "error")
                    return
                self._control.check()
                if ir.direct_answer:
                    await self._fire("succeed")
                    return
                if ir.current_plan is None:  # an unusable reply: plan again
                    continue
                await self._fire("exec_plan")
                self._control.check()
                if self._budget is not None and self._budget.exhausted is not None:
                    await self._stop("max_tokens")
                    return
                if await self._fire("succeed"):
                    return
        except AbortRequested:
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
        write_planning_context(
            ir.context.current_input.additional_kwargs,
            self._interpreter(ir, observer=None).describe_callables(),
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
                write_recall(context, recall)
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
        if self._ir is not None:
            self._ir.start_attempt()

    async def on_enter_planning(self, event: EventData) -> None:
        """Run a freshly built plan chain; a ```tf_plan block is the plan, else the answer."""
        ir, budget = self._ir, self._budget
        if ir is None or budget is None:
            return
        if budget.exhausted is not None:
            raise budget.exhausted
        ir.iterations += 1
        budget.iterations_used = ir.iterations
        assert self.plan_llm is not None and self._recorder is not None
        prompts = [self.planning_prompt, self._memo_prompt, self._knowledge_prompt,
                   self._question_prompt]
        callables = [*self.spec_chains, *(tool.name for tool in self.tools)]
        await ask_planner(ir, self.plan_llm, prompts, self._control, self._recorder, callables)
        if ir.interpreter_err is not None:  # the planner replied with nothing
            self._contextual_plan_info.record(ir)

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
        await run_plan(ir, self._interpreter(ir, self._plan_calls), self._recorder,
                       self._control)

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
            self._contextual_plan_info.record(ir)
            return False
        if self.neural is not None:
            self.neural.raise_if_new_input(ir.context.conversation_id)
        assert self.validate_llm is not None
        solved = await validate(
            ir, self.validate_llm, self.validate_prompt, self._control, self._recorder
        )
        if not solved:
            self._contextual_plan_info.record(ir)
        return solved

    # -- machine callbacks: terminal states --------------------------------------------

    async def on_enter_succeeded(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "succeeded"
        self._contextual_plan_info.clear(ir.context.conversation_id)
        await self.acommit_message(
            ir.context.conversation_id, ir.answer_message(answer_text(ir.final_result))
        )

    async def on_enter_failed(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "failed"
        ir.reason = event.kwargs.get("reason", ir.reason or "error")
        self._contextual_plan_info.record(ir)
        detail = ir.error or ir.suggestion or ir.last_error or ""
        answer = ir.answer_message(f"(no answer: {ir.reason}) {detail}".strip())
        await self.acommit_message(ir.context.conversation_id, answer)

    async def on_enter_aborted(self, event: EventData) -> None:
        ir = self._ir
        if ir is None:
            return
        ir.status = "aborted"
        ir.reason = event.kwargs.get("reason", "aborted")
        self._contextual_plan_info.record(ir)

    # -- helpers -----------------------------------------------------------------------

    def _budget_stop(self, budget: str, used: float, limit: float) -> None:
        if self._recorder is not None:
            self._recorder.emit(EventType.BUDGET, budget=budget, used=used, limit=limit,
                                exhausted=True)
