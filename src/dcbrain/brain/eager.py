"""Eager execution: a plan's read-only calls start while the planner is still writing it.

While the planner's reply streams in, :class:`EagerPlanning` follows it with a
:class:`~dcbrain.tfplan.feed.PlanFeed`. Once a top-level statement is complete, the plan's
statements so far are checked statically (the run's own check, against everything seen so
far) and, as long as every one of them refers to no callable but tools marked
``side_effects=False`` (without ``requires_approval``) and chains that need no approval
and may call no other tool (:func:`early_chain`), they run: in a plan run of their own,
which makes no call but to those, announces no call and journals into a journal of its
own. A statement that refers to anything else ends this: it and what follows wait for
the whole plan.

Each call that run makes is held under its journal key (:class:`EagerCalls`). The whole
plan then runs as it always does, after its complete static check, with the run's
policies, approvals and journal; when it reaches a call held under the same key, that
call takes the early call's result (waiting for it while it still runs) instead of
calling the tool again. So the run's events, its journal and its keys are those of a
run without eager execution: only sooner. A plan that fails its check, or a reply
without a plan, never uses the early results: they were read-only, and are dropped.
Statements that are pure computation run again in the whole plan (they are cheap);
the tools and chains are not called twice. A chain's LLM calls go to the run's
observer when they are made, as the planner's do: the run's budget counts their tokens
once (those of a dropped early call too: they were spent), and their events come while
the plan is written rather than inside the chain's call events.

Only the whole plan's calls are journaled under the run's journal. A durable run killed
during eager execution resumes as a run without it would: a planner reply cut off is
asked again, a finished one is replayed from the journal (not streamed, so nothing runs
early), and the early calls the whole plan had not taken yet run again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dcbrain.chain._journaling import plain_copy
from dcbrain.chain._policy_gate import effective_mode
from dcbrain.exceptions import EagerStopped
from dcbrain.journal import CallJournal, JournalKey, current_call
from dcbrain.tfplan.feed import PlanFeed, Statement, prefix_source
from dcbrain.tools import Tool

if TYPE_CHECKING:
    from dcbrain.brain.dc_brain import DCBrain
    from dcbrain.brain.run import BrainRun
    from dcbrain.chain import Chain, Chains, TFChainInterpreter

#: Names a statement may not refer to and still run early (whatever the brain's tools).
_NEVER_EARLY = frozenset({"__construct_chain"})


#: What a held call that failed leaves: the whole plan's call runs the tool itself.
_FAILED = object()


class EagerCalls:
    """The calls an early run made in one plan attempt, by journal key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[JournalKey, concurrent.futures.Future[Any]] = {}
        self._closed = False
        #: How many calls the whole plan took from the early run.
        self.served = 0

    def close(self) -> None:
        """No early call starts from now on (calls already running finish)."""
        with self._lock:
            self._closed = True

    def early(self, key: JournalKey, work: Callable[[], Any]) -> Any:
        """Make the early run's call ``key``: ``work()``, held for the whole plan."""
        future, mine = self._claim(key)
        if not mine:
            return self._wait(future)
        try:
            result = work()
        except BaseException:
            self._fail(key, future)
            raise
        future.set_result(plain_copy(result))
        return result

    async def aearly(self, key: JournalKey, work: Callable[[], Any],
                     copier: Callable[[Any], Any] = plain_copy) -> Any:
        """:meth:`early` for an async tool (or a chain: its result copied by ``copier``)."""
        future, mine = self._claim(key)
        if not mine:
            return await self._await(future, copier)
        try:
            result = await work()
            held = copier(result)
        except BaseException:
            self._fail(key, future)
            raise
        future.set_result(held)
        return result

    def held(self, key: JournalKey) -> concurrent.futures.Future[Any] | None:
        """The early call ``key``, if the early run made it (or is making it)."""
        with self._lock:
            return self._held.get(_base(key))

    def _claim(self, key: JournalKey) -> tuple[concurrent.futures.Future[Any], bool]:
        key = _base(key)
        with self._lock:
            future = self._held.get(key)
            if future is not None:
                return future, False
            if self._closed:
                raise EagerStopped("the whole plan has arrived")
            future = concurrent.futures.Future()
            self._held[key] = future
            return future, True

    def _fail(self, key: JournalKey, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._held.pop(_base(key), None)
        future.set_result(_FAILED)

    def _wait(self, future: concurrent.futures.Future[Any]) -> Any:
        result = future.result()
        if result is _FAILED:
            raise EagerStopped("an early call failed")
        return plain_copy(result)

    async def _await(self, future: concurrent.futures.Future[Any],
                     copier: Callable[[Any], Any] = plain_copy) -> Any:
        result = await asyncio.wrap_future(future)
        if result is _FAILED:
            raise EagerStopped("an early call failed")
        return copier(result)


def _base(key: JournalKey) -> JournalKey:
    return key if not key.failed_try else JournalKey(key.attempt, key.path, key.name,
                                                     key.args, key.occurrence)


#: The early calls of the plan attempts whose planning is still followed, by run id
#: and attempt; held by their :class:`EagerPlanning` for as long as it lives.
_attempts: weakref.WeakValueDictionary[tuple[str | None, int], EagerCalls] = \
    weakref.WeakValueDictionary()
#: Each run's latest eager planning (kept until the next planning of the run).
_plannings: weakref.WeakKeyDictionary[Any, EagerPlanning] = weakref.WeakKeyDictionary()


def _held_for_current_call() -> concurrent.futures.Future[Any] | None:
    context = current_call()
    if context is None:
        return None
    calls = _attempts.get((context.run_id, context.key.attempt))
    return calls.held(context.key) if calls is not None else None


def _served(future: concurrent.futures.Future[Any],
            copier: Callable[[Any], Any] = plain_copy) -> Any:
    result = future.result()
    if result is _FAILED:
        return _FAILED
    context = current_call()
    if context is not None:
        calls = _attempts.get((context.run_id, context.key.attempt))
        if calls is not None:
            calls.served += 1
    return copier(result)


def served_tools(brain: DCBrain) -> list[Tool]:
    """The tools of ``brain`` as its runs' whole plans call them: with eager execution,
    a read-only tool first looks for the early call of the same journal key. Made once
    per brain, by :meth:`DCBrain.plan_callables`."""
    if not brain.eager:
        return brain.tools
    return [_served_tool(tool) if early_tool(tool) else tool for tool in brain.tools]


def early_tool(tool: Tool) -> bool:
    """Whether calls of ``tool`` may start before the whole plan passed its check."""
    return not tool.side_effects and tool.requires_approval is False


def served_chains(brain: DCBrain) -> dict[str, Chain | Chains]:
    """The chains of ``brain`` as its runs' whole plans call them: with eager execution,
    a chain that may run early first looks for the early call of the same journal key."""
    if not brain.eager:
        return brain.spec_chains
    return {name: _served_chain(chain) if early_chain(chain) else chain
            for name, chain in brain.spec_chains.items()}


def early_chain(chain: Chain | Chains) -> bool:
    """Whether calls of ``chain`` may start before the whole plan passed its check: it
    needs no approval, and every tool it may call (its sub-chains' too) is read-only."""
    from dcbrain.chain import Chains

    if chain.requires_approval is not False \
            or not all(map(early_tool, getattr(chain, "tools", ()))):
        return False
    return not isinstance(chain, Chains) or all(map(early_chain, chain.chains))


#: What an early chain call holds: its result and the message's keyword arguments after
#: it (the intermediate results it wrote), both copied for each taker.
_chain_copy = copy.deepcopy


def _served_chain(chain: Chain | Chains) -> Chain | Chains:
    """``chain``, answering a call the early run made from its result."""
    served = copy.copy(chain)
    async_run = chain.async_run

    async def async_run_served(message: Any, *args: Any, **kwargs: Any) -> Any:
        future = _held_for_current_call()
        if future is not None:
            await asyncio.wrap_future(future)
            try:
                held = _served(future, _chain_copy)
            except Exception:  # its result cannot be copied: the chain runs again
                held = _FAILED
            if held is not _FAILED:
                result, written = held
                message.additional_kwargs.update(written)
                return result
        return await async_run(message, *args, **kwargs)

    served.async_run = async_run_served  # type: ignore[method-assign,assignment]
    return served


def _early_chain(chain: Chain | Chains, calls: EagerCalls) -> Chain | Chains:
    """``chain`` as the early run calls it: each call held under its journal key."""
    early = copy.copy(chain)
    async_run = chain.async_run

    async def async_run_early(message: Any, *args: Any, **kwargs: Any) -> Any:
        context = current_call()
        if context is None:
            raise EagerStopped("an early call outside the journal")

        async def work() -> tuple[Any, dict[str, Any]]:
            result = await async_run(message, *args, **kwargs)
            return result, dict(message.additional_kwargs)

        result, written = await calls.aearly(context.key, work, _chain_copy)
        message.additional_kwargs.update(written)
        return result

    early.async_run = async_run_early  # type: ignore[method-assign,assignment]
    return early


def _served_tool(tool: Tool) -> Tool:
    """``tool``, answering a call the early run made from its result."""
    served = copy.copy(tool)
    call, acall = tool.call, tool.acall

    def call_served(**kwargs: Any) -> Any:
        future = _held_for_current_call()
        if future is not None:
            result = _served(future)
            if result is not _FAILED:
                return result
        return call(**kwargs)

    async def acall_served(**kwargs: Any) -> Any:
        future = _held_for_current_call()
        if future is not None:
            await asyncio.wrap_future(future)
            result = _served(future)
            if result is not _FAILED:
                return result
        return await acall(**kwargs)

    served.call = call_served  # type: ignore[method-assign]
    served.acall = acall_served  # type: ignore[method-assign]
    return served


def _early_tool(tool: Tool, calls: EagerCalls) -> Tool:
    """``tool`` as the early run calls it: each call held under its journal key."""
    early = copy.copy(tool)
    call, acall = tool.call, tool.acall

    def call_early(**kwargs: Any) -> Any:
        context = current_call()
        if context is None:
            raise EagerStopped("an early call outside the journal")
        return calls.early(context.key, lambda: call(**kwargs))

    async def acall_early(**kwargs: Any) -> Any:
        context = current_call()
        if context is None:
            raise EagerStopped("an early call outside the journal")
        return await calls.aearly(context.key, lambda: acall(**kwargs))

    early.call = call_early  # type: ignore[method-assign]
    early.acall = acall_early  # type: ignore[method-assign]
    return early


class EagerPlanning:
    """Follows one planning of a run: runs its plan's read-only statements early."""

    def __init__(self, run: BrainRun) -> None:
        brain = run.brain
        self.run = run
        self.attempt = run.ir.iterations
        self.calls = EagerCalls()
        self._early = {tool.name: tool for tool in brain.tools if early_tool(tool)}
        self._early_chains = {name: chain for name, chain in brain.spec_chains.items()
                              if early_chain(chain)}
        self._all = frozenset({*brain.spec_chains, *(tool.name for tool in brain.tools)}) \
            | _NEVER_EARLY
        self._feed = PlanFeed()
        self._eligible: list[Statement] = []
        self._blocked = False  # a statement that waits for the whole plan was seen
        self._started = 0  # statements the latest early run ran
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._interpreter: TFChainInterpreter | None = None
        #: Whether an early run failed (its check, or a call): no more start.
        self.stopped = False
        #: Statements that ran early, by the latest early run.
        self.ran = 0

    # -- following the reply -------------------------------------------------------------

    def open_reply(self) -> Callable[[str], None]:
        """A planner LLM call begins its reply: its text is followed anew."""
        self._feed = PlanFeed()
        return self._take

    def _take(self, text: str) -> None:
        if self._feed.add(text):
            self._wake()

    def _wake(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._advance()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._advance)

    def _advance(self) -> None:
        """Take the statements complete now; start an early run if there are new ones."""
        if self.stopped or self._blocked:
            return
        statements = self._feed.statements
        for statement in statements[len(self._eligible):]:
            if not self._may_run_early(statement):
                self._blocked = True
                break
            self._eligible.append(statement)
        if len(self._eligible) > self._started and (self._task is None or self._task.done()):
            assert self._loop is not None
            self._task = self._loop.create_task(self._run_early())

    def _may_run_early(self, statement: Statement) -> bool:
        called = statement.names & self._all
        return all(name in self._early or name in self._early_chains for name in called)

    # -- the early runs ----------------------------------------------------------------

    async def _run_early(self) -> None:
        while not self.stopped and len(self._eligible) > self._started:
            statements = list(self._eligible)
            self._started = len(statements)
            try:
                await self._interpreter_for().aevaluate(prefix_source(statements))
            except EagerStopped:
                self.stopped = True
            except asyncio.CancelledError:
                self.stopped = True
                raise
            except Exception:  # its check or a call failed: the whole plan decides
                self.stopped = True
            else:
                self.ran = len(statements)

    def _interpreter_for(self) -> TFChainInterpreter:
        if self._interpreter is None:
            self._interpreter = early_interpreter(self.run, [
                _early_tool(tool, self.calls) for tool in self._early.values()], {
                name: _early_chain(chain, self.calls)
                for name, chain in self._early_chains.items()})
        return self._interpreter

    # -- the planning's lifetime ---------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        _attempts[(self.run.run_id, self.attempt)] = self.calls

    def finish(self, *, plan_follows: bool) -> None:
        """The planning ended: no new early call starts; without a plan to run, the early
        run stops at once."""
        self.calls.close()
        if not plan_follows and self._task is not None and not self._task.done():
            self._task.cancel()


def early_interpreter(run: BrainRun, tools: Sequence[Tool],
                      chains: Mapping[str, Chain | Chains] | None = None) -> TFChainInterpreter:
    """The interpreter of a run's early statements: its read-only tools and the chains
    that may run early only (with the run's conversation and knowledge), no observer,
    no approvals, its own journal under the run's id and attempt (so its calls have the
    keys of the whole plan's), the run's limits, policies and checks."""
    from dcbrain.chain import TFChainInterpreter

    brain, context = run.brain, run.context
    mode = effective_mode(brain.policy_mode, [*brain.spec_chains.values(), *brain.tools],
                          brain.policies)
    return TFChainInterpreter(
        dict(chains or {}),
        tools=tools,
        additional_info=dict(context.chain_info),
        limits=brain.limits,
        default_llm=brain.default_llm,
        conversation=context.conversation,
        knowledge=context.knowledge,
        journal=CallJournal(),
        attempt=run.ir.iterations,
        run_id=run.run_id,
        isolation=brain.isolation,
        policies=brain.policies,
        policy_mode=mode,
        flow_check=brain.policy_mode != "off",
        planner_saw=run.planning.untrusted_sources_shown,
        on_violation=brain.on_violation,
    )


@contextlib.asynccontextmanager
async def eager_planning(run: BrainRun) -> AsyncIterator[Callable[[], Callable[[str], None]]
                                                          | None]:
    """Around one planning of ``run``: what follows the planner's streamed reply (``None``
    without eager execution)."""
    if not run.brain.eager:
        yield None
        return
    planning = EagerPlanning(run)
    _plannings[run] = planning  # the previous planning's early calls are dropped
    planning.start()
    plan_follows = False
    try:
        yield planning.open_reply
        ir = run.ir
        plan_follows = ir.current_plan is not None and ir.interpreter_err is None
    finally:
        planning.finish(plan_follows=plan_follows)


def latest_planning(run: BrainRun) -> EagerPlanning | None:
    """The run's latest eager planning (tests and benchmarks look at it)."""
    return _plannings.get(run)


__all__ = [
    "EagerCalls",
    "EagerPlanning",
    "EagerStopped",
    "eager_planning",
    "early_chain",
    "early_interpreter",
    "early_tool",
    "latest_planning",
    "served_chains",
    "served_tools",
]
