"""TFChainInterpreter: runs tf_plan scripts whose calls are chains and tools.

Each chain call gets its own ``current_input``: a shallow copy of the interpreter's
``additional_info`` (shared by reference with the caller) merged with the call's keyword
arguments. After the call only ``__chains_intermediate_results`` is copied back, so later
chains read earlier outputs while call arguments never leak into the next call (the
two-phase sync). ``parallel(...)`` branches work on copies of their own; what each branch
added is merged back in argument order, whichever finished first.

With a :class:`~dcbrain.journal.CallJournal`, every chain, tool and ``__construct_chain``
call is recorded when it finishes, and a call the journal already holds (the same call of
an earlier attempt, or exactly this call of a replayed attempt) returns the recorded result
instead of running again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from dcbrain.chain._announce import CallAnnouncer, PlanCallObserver
from dcbrain.chain._journaling import PASSTHROUGH, PlanJournal, replayed
from dcbrain.chain._plan_result import (
    ChainConsoleResult,
    attach_partial,
    partial_chain_result,
)
from dcbrain.chain._plan_scope import BranchHooks, PlanScope, current_scope, text_bytes
from dcbrain.chain._policy_gate import tracking_of
from dcbrain.chain._retrying import JournaledTries
from dcbrain.chain._usage import UsageCollector
from dcbrain.chain.approval_gate import ApprovalGate
from dcbrain.chain.call_pipeline import (
    ChainCallable,
    ToolCallable,
    announce_stage,
    gate_stage,
    journal_stage,
    trace_stage,
)
from dcbrain.chain.chain import Chain
from dcbrain.chain.construct import (
    CALL_ARGUMENTS,
    built_by_plan,
    construct_plan_chain,
)
from dcbrain.chain.containers import Chains
from dcbrain.chain.intermediate import intermediate_results_added
from dcbrain.chain.plan_callables import PlanCallables, RunScope
from dcbrain.chain.prompts import MemoPrompt
from dcbrain.chain.result import ChainOutput, ChainResult
from dcbrain.chain.runnable import TEXT_KWARGS, input_text, to_json
from dcbrain.exceptions import TFChainError
from dcbrain.journal import CallJournal, JournalKey, canonical_args
from dcbrain.llm.base import ChatLLM
from dcbrain.llm.observe import llm_observer
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS, TextMessage
from dcbrain.policies import (
    Policy,
    PolicyMode,
    Violation,
)
from dcbrain.tfplan import (
    CallableSpec,
    CallRecord,
    ConsoleResult,
    Interpreter,
    Limits,
    Problem,
    TFCheckError,
    check,
    compile_source,
)
from dcbrain.tfplan.errors import TFPolicyDenied
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.interpreter import Isolation, off_the_loop
from dcbrain.tfplan.labels.path import label_path
from dcbrain.tools import Tool

#: Keyword arguments that become the text (``content``) of a chain's ``current_input``.
INPUT_KWARGS = TEXT_KWARGS


class TFChainInterpreter:
    """Checks and runs tf_plan scripts that call ``chains_map``'s chains and ``tools``.

    ``additional_info`` is used by reference (usually ``current_input.additional_kwargs``
    of the caller): the intermediate results of the plan's chains land in it.
    ``default_llm`` backs ``__construct_chain(...)``; chains built that way register
    with ``neural`` when one is given. With ``neural`` and ``conversation_id``, new user
    input is checked before every chain call and raises :class:`TFUserNewInputError`
    out of the plan; that error and :class:`TFTokenBudgetExceeded` pass through untouched.
    ``observer`` hears of a call after that check, as a :class:`PlanCall` of its kind.
    With a ``journal`` every call is recorded under plan attempt ``attempt`` and a call the
    journal holds returns its recorded result (``PlanCall.reused``); ``run_id``
    goes into each call's idempotency key (:func:`~dcbrain.journal.current_call`).
    ``isolation`` is where plans run: ``"process"`` (sandbox worker processes, the
    default) or ``"inprocess"`` (trusted plans). ``approvals`` decides the calls of tools
    and chains declared ``requires_approval`` (:class:`ApprovalGate`); without it such a
    call is denied (:class:`~dcbrain.tfplan.TFApprovalDenied`): nobody can be asked.
    ``flow_check`` (on by default) makes a plan whose untrusted data certainly reaches a
    tool's ``trusted_args`` a check error before anything runs (see
    :mod:`dcbrain.tfplan.flow`); off, only the checks made while the plan runs see such
    flows. ``policies`` and ``policy_mode`` are checked before every call (see
    :mod:`dcbrain.policies`); ``planner_saw`` are the untrusted sources the plan's writer
    had read: its literals carry them too. ``on_violation="ask"`` puts a call whose
    ``trusted_args`` carry untrusted data to a person (``approvals``) instead of refusing
    it, unless its tool says otherwise; the static flow check leaves such calls alone.
    """

    def __init__(
        self,
        chains_map: Mapping[str, Chain | Chains],
        *,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        additional_info: dict[str, Any] | None = None,
        limits: Limits | None = None,
        default_llm: ChatLLM | None = None,
        conversation: list[TextMessage] | None = None,
        knowledge: list[Any] | None = None,
        observer: PlanCallObserver | None = None,
        neural: Any | None = None,
        conversation_id: str | None = None,
        journal: CallJournal | None = None,
        attempt: int = 0,
        run_id: str | None = None,
        isolation: Isolation = "process",
        approvals: ApprovalGate | None = None,
        policies: Sequence[Policy] = (),
        policy_mode: PolicyMode | None = None,
        flow_check: bool = True,
        planner_saw: Iterable[str] = (),
        on_violation: Violation = "deny",
    ) -> None:
        self._setup(
            PlanCallables(chains_map, tools=tools, limits=limits, default_llm=default_llm,
                          isolation=isolation, policies=policies, policy_mode=policy_mode,
                          flow_check=flow_check, on_violation=on_violation),
            RunScope(additional_info=additional_info, conversation=conversation,
                     knowledge=knowledge, observer=observer, neural=neural,
                     conversation_id=conversation_id, journal=journal, attempt=attempt,
                     run_id=run_id, approvals=approvals, planner_saw=planner_saw))

    @classmethod
    def of(cls, callables: PlanCallables, run: RunScope) -> TFChainInterpreter:
        """The interpreter of one run over ``callables`` (made once, e.g. per brain)."""
        interpreter = cls.__new__(cls)
        interpreter._setup(callables, run)
        return interpreter

    def _setup(self, plan: PlanCallables, run: RunScope) -> None:
        self.plan_callables = plan
        self.flow_check = plan.flow_check
        self.chains_map = plan.chains_map
        self.tools = plan.tools
        self.default_llm = plan.default_llm
        self._approvals = run.approvals
        self._journal = PlanJournal(run.journal, run.attempt, run.run_id)
        self.additional_info: dict[str, Any] = run.additional_info \
            if run.additional_info is not None else {}
        self.conversation: list[TextMessage] = list(run.conversation or [])
        self.knowledge: list[Any] = list(run.knowledge or [])
        self.neural = run.neural
        self.conversation_id = run.conversation_id
        callables: dict[str, Callable[..., Any]] = {
            name: ChainCallable(self, name, chain) for name, chain in self.chains_map.items()}
        for tool in self.tools:
            callables[tool.name] = ToolCallable(self, tool)
        self._callables = callables
        self._announcer = CallAnnouncer(run.observer) if run.observer is not None else None
        self._policies = plan.policy_gate(run.planner_saw)
        self._interpreter = Interpreter(
            callables,
            limits=plan.run_limits,
            construct_chain=self._construct_chain,
            observer=self._announcer,
            parallel_hooks=BranchHooks(),
            passthrough=PASSTHROUGH,
            isolation=plan.isolation,
            tracking=tracking_of(plan.mode),
            sources=plan.sources,
            trusted_fields=plan.trusted_fields,
            reads={name: ["memory:conversation"] for name, chain in self.chains_map.items()
                   if _renders_conversation(chain) and _holds_answers(self.conversation)},
            stop_asked=run.stop_asked,
        )

    def close(self) -> None:
        """Let go of the chains and tools of this run (for an interpreter made for one
        run, as :meth:`of` makes them, once its last plan ended; it runs no plan after).

        Its callables and the plan interpreter refer back to it: without this, they and
        everything the run's plans left (journal entries, results, events) would wait for
        Python's cyclic collector instead of going as the run lets go of them."""
        self._callables = {}
        self._interpreter.callables = {}
        self._interpreter.construct_chain = None

    @property
    def limits(self) -> Limits:
        return self._interpreter.limits

    # -- what planners see -------------------------------------------------------------
    @property
    def specs(self) -> dict[str, CallableSpec]:
        """Specs of the chains and tools; arguments already in ``additional_info`` are optional."""
        return self.plan_callables.specs(self.additional_info)

    def _checked_specs(self) -> dict[str, CallableSpec]:
        """What the checker holds plans to (see :meth:`PlanCallables.checked_specs`)."""
        return self.plan_callables.checked_specs(self.additional_info)

    def check(self, plan: str) -> list[Problem]:
        """Every static problem of ``plan`` (syntax included) against the chains and tools."""
        return check(plan, self._checked_specs(), flow=self.flow_check,
                     chain_inputs=self.additional_info, literals=self._policies.planner_saw,
                     strict=self._policies.mode == "strict")

    def describe_callables(self) -> list[dict[str, Any]]:
        """Name, kind, description, input and output schema of each chain and tool, with
        its trust declarations, its docstring's ``Returns:`` and its example result."""
        return self.plan_callables.describe(self.additional_info)

    # -- running -----------------------------------------------------------------------
    def evaluate(self, plan: str, *, check: bool = True) -> ChainConsoleResult:
        """Check (unless ``check=False``) and run ``plan`` in this thread.

        Raises a :class:`~dcbrain.tfplan.TFInterpreterError` when the plan fails;
        :func:`partial_chain_result` gives what it did until then.
        """
        self._prepare(plan, check)
        with self._plan_run(plan) as run:
            run.console = self._interpreter.run(plan, host_budget=run.scope.budget)
        return run.result

    async def aevaluate(self, plan: str, *, check: bool = True) -> ChainConsoleResult:
        """:meth:`evaluate` for async code: async chains run on the current event loop, and
        a long plan is checked and compiled in a worker thread, so the loop keeps serving."""
        await off_the_loop(plan, self._prepare, plan, check)
        with self._plan_run(plan) as run:
            run.console = await self._interpreter.arun(plan, host_budget=run.scope.budget)
        return run.result

    def construct_chain_run_input(
        self, kwargs: Mapping[str, Any], *, additional_info: Mapping[str, Any] | None = None
    ) -> TextMessage:
        """The ``current_input`` of one chain call: a shallow copy of ``additional_info``
        (default: the interpreter's) updated with the call's ``kwargs``.

        Its text is the ``input``/``input_text``/``text`` argument, else the arguments as JSON.
        """
        info = dict(self.additional_info if additional_info is None else additional_info)
        info.update(kwargs)
        text = input_text(kwargs) if kwargs else to_json({})  # "{}": a call with no arguments
        return TextMessage(content=text, additional_kwargs=info)

    # -- internals ---------------------------------------------------------------------
    def _prepare(self, plan: str, run_check: bool) -> None:
        # compiled as the run will compile it (raises TFSyntaxError); the run reuses it
        parsed, _ = compile_source(plan, frozenset(self._interpreter.callables),
                                   self._interpreter.tracking)
        if run_check:
            problems = check(parsed, self._checked_specs(), flow=self.flow_check,
                             chain_inputs=self.additional_info,
                             literals=self._policies.planner_saw,
                             strict=self._policies.mode == "strict")
            if problems:
                raise TFCheckError(problems, parsed.source)

    def _root_scope(self, *, run: bool = True) -> PlanScope:
        """The scope of a plan run (charged to the process's host budget too, until
        the run ends), or (``run=False``) of a call made outside any run."""
        budget = HostBudget(self.limits.host_bytes) if run \
            else HostBudget(self.limits.host_bytes, shared=None)
        return PlanScope(self.additional_info, UsageCollector.under_current(), budget)

    @contextmanager
    def _plan_run(self, plan: str) -> Iterator[_PlanRun]:
        """One run of ``plan`` in a root scope: the ``console`` the caller sets becomes the
        ``result``; a failure carries the plan's path and what the run did until then."""
        scope = self._root_scope()
        run = _PlanRun(scope)
        try:
            with self._entered(scope):
                try:
                    yield run
                except Exception as exc:
                    _with_path(exc, plan)
                    attach_partial(exc, scope.collector.total, scope.results, scope.reused)
                    raise
            assert run.console is not None
            run.result = self._finish(run.console, scope)
        finally:
            scope.budget.close()  # the run ended: its share of the process budget is free

    @contextmanager
    def _entered(self, scope: PlanScope) -> Iterator[None]:
        scope_token = current_scope.set(scope)
        observer_token = llm_observer.set(scope.collector)
        try:
            yield
        finally:
            llm_observer.reset(observer_token)
            current_scope.reset(scope_token)

    def _scope(self) -> PlanScope:
        scope = current_scope.get()
        return scope if scope is not None else self._root_scope(run=False)

    def _call_chain(self, callable_: ChainCallable, kwargs: dict[str, Any]) -> Any:
        """Phase one, in the plan's thread: safe point, announcement, then the copied input."""
        if self.neural is not None and self.conversation_id is not None:
            self.neural.raise_if_new_input(self.conversation_id)
        chain = callable_.chain
        key, entry = journal_stage(self, callable_.journal_name, kwargs, chain.reuse)
        denied = gate_stage(self, "chain", callable_.name, chain, kwargs, key) \
            if entry is None else None
        record = announce_stage(self, "chain", key, entry)
        scope = self._scope()
        if entry is not None:
            if entry.ok and entry.intermediate:
                scope.write(entry.intermediate)
            return replayed(entry)
        if denied is not None:
            raise denied
        message = self.construct_chain_run_input(kwargs, additional_info=scope.chain_info())
        if built_by_plan(chain):
            message.additional_kwargs[CALL_ARGUMENTS] = list(kwargs)
        return self._run_chain(chain, message, scope, key, record)

    async def _run_chain(
        self, chain: Chain | Chains, message: TextMessage, scope: PlanScope,
        key: JournalKey | None = None, record: CallRecord | None = None,
    ) -> ChainOutput:
        """Phase two: run the chain (its tries), then sync back only the intermediate
        results (a failed try's stay: no rollback)."""
        token = llm_observer.set(scope.collector)
        started = time.perf_counter()
        before = dict(message.additional_kwargs)
        result: ChainResult | None = None
        added: dict[str, Any] = {}

        def run() -> Awaitable[ChainResult]:
            return chain.async_run(message, self.conversation, self.knowledge)

        try:
            with self._journal.context(key), trace_stage(self, record), \
                    self._streamed(record):
                if chain.retry is None:
                    result = await run()
                else:
                    tries = JournaledTries(self._journal, key, "chain", self._announcer, record)
                    result = await tries.acall(chain.retry, run)
        except Exception as exc:
            await self._journal.arecord(key, "chain", started, error=exc)
            raise
        finally:
            llm_observer.reset(token)
            # also after a failure: what was written stays (the cache has no rollback)
            after = message.additional_kwargs
            added = intermediate_results_added(before, after)
            cache = after.get(CHAINS_INTERMEDIATE_RESULTS)
            scope.write(added, cache, text_bytes(cache) - text_bytes(
                before.get(CHAINS_INTERMEDIATE_RESULTS)))
        assert result is not None
        scope.record(result)
        await self._journal.arecord(
            key, "chain", started, result=result.content, tokens=result.usage.total_tokens,
            intermediate=added)
        return result.content

    def _streamed(self, record: CallRecord | None) -> AbstractContextManager[None]:
        """While the chain call ``record`` runs, its LLMs' text goes to the observer."""
        if self._announcer is None:
            return nullcontext()
        return self._announcer.streamed(record)

    def _construct_chain(self, **kwargs: Any) -> Callable[..., Any]:
        """``__construct_chain(...)``: a new chain on ``default_llm``, callable by the plan.

        Building a chain calls no LLM, so a journaled construction is built again (it has
        to be: the plan needs the chain) and only reported as reused.
        """
        key, entry = journal_stage(self, "__construct_chain", kwargs, True)
        announce_stage(self, "construct_chain", key, entry)
        if self.default_llm is None:
            raise TFChainError(
                "__construct_chain needs a default LLM: pass default_llm=... to "
                "TFChainInterpreter (llm=... for DCChains)"
            )
        started = time.perf_counter()
        try:
            chain = construct_plan_chain(self.default_llm, kwargs)
            self._check_constructed_name(chain.name)
        except Exception as exc:
            self._journal.record(key if entry is None else None, "construct_chain", started,
                                 error=exc)
            raise
        if self.neural is not None:
            self.neural.register("chain", chain.name, chain)
        if entry is None:
            self._journal.record(key, "construct_chain", started, result={"name": chain.name})
        digest = hashlib.sha256(canonical_args(kwargs).encode()).hexdigest()[:12]
        return ChainCallable(self, chain.name, chain, journal_name=f"{chain.name}#{digest}")

    def _check_constructed_name(self, name: str) -> None:
        """A plan's chain never takes the name of a chain or tool it was given."""
        taken = name in self._callables
        if not taken and self.neural is not None:
            registered = self.neural.registered("chain").get(name)
            taken = registered is not None and not built_by_plan(registered)
        if taken:
            raise TFChainError(f"__construct_chain name {name!r} is taken by a chain or tool "
                               "of this plan: choose another name")

    def _finish(self, console: ConsoleResult, scope: PlanScope) -> ChainConsoleResult:
        return ChainConsoleResult.of_plan(console, scope.collector.total, scope.results,
                                          scope.reused)


__all__ = ["INPUT_KWARGS", "ChainConsoleResult", "TFChainInterpreter", "partial_chain_result"]


@dataclass
class _PlanRun:
    """One plan run of :meth:`TFChainInterpreter._plan_run`: its scope, then its outcome."""

    scope: PlanScope
    console: ConsoleResult | None = None
    result: ChainConsoleResult = field(init=False)


def _renders_conversation(chain: Chain | Chains) -> bool:
    """Whether ``chain`` (or a chain in it) has a prompt that renders the conversation."""
    if isinstance(chain, Chains):
        return any(_renders_conversation(child) for child in chain.chains)
    return any(isinstance(prompt, MemoPrompt) for prompt in chain._all_prompts())


def _holds_answers(conversation: Sequence[TextMessage]) -> bool:
    """Whether the conversation holds more than the person's own turns: earlier answers,
    which may quote what earlier runs read (``memory:conversation``)."""
    return any(getattr(message, "role", "user") != "user" for message in conversation)


def _with_path(error: Exception, plan: str) -> None:
    """A refusal's message, with the way the untrusted label reached its argument."""
    if not isinstance(error, TFPolicyDenied) or error.argument is None or not error.line:
        return
    path = label_path(plan, error.line, error.argument, error.sources)
    if path is not None:
        error.message += f"; path: {path}"
