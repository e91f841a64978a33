"""The one door between a plan and the host: calls to registered chains and tools.

A registered callable appears in a plan as an opaque :class:`HostCallable`. Every call
goes through :meth:`Dispatcher.call`, which counts it against ``max_calls``, checks that
arguments and result are plain data, records a trace entry, awaits async callables on
the event loop, and turns failures into :class:`TFCallError` at the call's position.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import lru_cache
from types import CodeType
from typing import TYPE_CHECKING, Any

from dcbrain.retries import call_deadline
from dcbrain.tfplan.abandoned import abandoned_threads
from dcbrain.tfplan.errors import (
    BranchLimitExceeded,
    CallLimitExceeded,
    HostMemoryExceeded,
    SizeLimitExceeded,
    TFApprovalDenied,
    TFCallError,
    TFInterpreterError,
    TFPolicyDenied,
    TFToolTimeout,
    TFToolUnavailable,
)
from dcbrain.tfplan.labels.provenance import CallSources, Tracker, call_sources, unknown_sources
from dcbrain.tfplan.parser import PLAN_FILENAME
from dcbrain.tfplan.result import CallRecord
from dcbrain.tfplan.state import Cancelled, Expired, RunState
from dcbrain.tfplan.values import NotPlainData, sized_plan_value

if TYPE_CHECKING:
    import asyncio

#: Estimated bytes of one call's entry in the trace, besides its arguments and result.
RECORD_BYTES = 1024
#: Estimated bytes the host builds for one ``parallel`` branch (its context, its scope).
BRANCH_BYTES = 1024

#: The run whose plan is being driven in this context (its host calls inherit it).
current_run: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "tf_plan_run", default=None)


def call_may_finish() -> bool:
    """Whether the host call running in this context may be recorded as finished.

    ``False`` once its plan stopped waiting for it (the plan's time limit passed, or its run
    was cancelled, while the call ran): its return is ignored, so nothing may record the
    call as finished. Claiming is atomic with the abandonment: a call that claimed in time
    is not counted as abandoned.
    """
    state = current_run.get()
    return state is None or state.claim_finish()


class HostCallable:
    """A chain or tool as a plan sees it: callable, with no attributes."""

    __slots__ = ("_dispatcher", "_func", "name")
    plan_type_name = "callable"

    def __init__(self, name: str, func: Callable[..., Any], dispatcher: Dispatcher) -> None:
        self.name = name
        self._func = func
        self._dispatcher = dispatcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatcher.call(self.name, self._func, args, kwargs)

    def call_with_sources(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                          sources: CallSources) -> Any:
        """The call, its arguments coming from ``sources`` (a plan that tracks labels)."""
        return self._dispatcher.call(self.name, self._func, args, kwargs, sources=sources)

    def __repr__(self) -> str:
        return f"<callable {self.name}>"


class Thunk:
    """A ``parallel`` branch: an expression to evaluate later, in its own thread."""

    __slots__ = ("args", "func")

    def __init__(self, func: Callable[..., Any], *args: Any) -> None:
        self.func = func
        self.args = args

    def __call__(self) -> Any:
        return self.func(*self.args)


_background: asyncio.AbstractEventLoop | None = None
_background_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """An event loop in a daemon thread, for async callables of synchronous runs."""
    import asyncio  # made when first needed: sandbox processes never need one

    global _background
    with _background_lock:
        if _background is None or _background.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="tf_plan-loop", daemon=True)
            thread.start()
            _background = loop
        return _background


@lru_cache(maxsize=256)
def _positions(code: CodeType) -> list[tuple[int | None, int | None, int | None, int | None]]:
    return list(code.co_positions())


def code_position(code: CodeType, lasti: int, lines: Sequence[str]) -> tuple[int, int]:
    """1-based line and column (in characters) of instruction ``lasti`` of ``code``."""
    positions = _positions(code)
    index = lasti // 2
    if not 0 <= index < len(positions):
        return code.co_firstlineno, 1
    line, _, col, _ = positions[index]
    if line is None:
        return code.co_firstlineno, 1
    if col is None:
        return line, 1
    if 0 < line <= len(lines):  # positions count UTF-8 bytes; report characters
        col = len(lines[line - 1].encode()[:col].decode(errors="ignore"))
    return line, col + 1


def caller_position(lines: Sequence[str]) -> tuple[int, int]:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename != PLAN_FILENAME:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return 0, 0
    return code_position(frame.f_code, frame.f_lasti, lines)


def _call_failed(name: str, exc: Exception) -> TFCallError:
    """The plan's error for a call of ``name`` that raised ``exc``."""
    error = TFCallError(f"{name}() failed: {exc}", kind=type(exc).__name__)
    error.transient = getattr(exc, "transient", False) is True
    return error


class Dispatcher:
    """Runs host calls and ``parallel`` branches for one plan run."""

    def __init__(
        self,
        state: RunState,
        lines: Sequence[str],
        construct_chain: Callable[..., Callable[..., Any]] | None,
        tracker: Tracker | None = None,
    ) -> None:
        self.state = state
        self.tracker = tracker
        self.lines = lines
        self.construct_hook = construct_chain
        self.constructed = 0

    # -- calls -----------------------------------------------------------------------
    def call(
        self,
        name: str,
        func: Callable[..., Any],
        args: Sequence[Any],
        kwargs: dict[str, Any],
        *,
        plain_result: bool = True,
        sources: CallSources | None = None,
    ) -> Any:
        self.count_call()
        args, kwargs = self.plain_arguments(name, args, kwargs)
        line, col = caller_position(self.lines)
        record = CallRecord(
            name=name, args=args, kwargs=kwargs, line=line, col=col,
            started_at=time.time(), branch=getattr(self.state.branch, "index", None),
        )
        tracker = self.tracker
        if tracker is None:
            return self.invoke(record, func, plain_result=plain_result)
        if sources is None:
            sources = unknown_sources(tracker)
        result = self.invoke(record, func, plain_result=plain_result, sources=sources)
        tracker.record(name, sources)
        return result

    def count_call(self) -> None:
        """Count one call against ``max_calls``."""
        state = self.state
        with state.lock:
            state.calls += 1
            count = state.calls
        if count > state.limits.max_calls:
            raise CallLimitExceeded(f"plan made more than {state.limits.max_calls} "
                                    "chain/tool calls")
        state.host_budget.charge(RECORD_BYTES, "trace entry")

    def plain_arguments(
        self, name: str, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """Copies of a call's arguments as plain data (the boundary copy), paid for from
        the run's host budget: the trace keeps them."""
        max_size = self.state.limits.max_size
        budget = self.state.host_budget
        where = f"{name}() arguments"
        try:  # each copy stops where the budget ends, not after copying everything
            args_copy, size = sized_plan_value(list(args), max_items=max_size, where=where,
                                               budget=budget)
            budget.charge(size, where)
            kwargs_copy, size = sized_plan_value(kwargs, max_items=max_size, where=where,
                                                 budget=budget)
            budget.charge(size, where)
        except NotPlainData as exc:
            raise TypeError(str(exc)) from None
        except OverflowError as exc:
            raise SizeLimitExceeded(str(exc)) from None
        return args_copy, kwargs_copy

    def invoke(self, record: CallRecord, func: Callable[..., Any], *,
               plain_result: bool = True, sources: CallSources | None = None) -> Any:
        """Run ``func`` with the arguments of ``record``, tracing it and translating errors;
        ``func`` finds ``sources`` in :data:`call_sources`."""
        state = self.state
        name = record.name
        state.trace.append(record)
        if state.observer is not None:
            state.observer.on_call_start(record)
        started = time.perf_counter()
        try:
            state.enter_host(record)
        except (Expired, Cancelled):  # refused: the plan stopped; the call ends unrun
            record.error = "stopped"
            record.duration_s = 0.0
            if state.observer is not None:
                state.observer.on_call_end(record)
            raise
        size = 0
        try:
            abandoned_threads.check(name, f"{name}()")
            labelled = call_sources.set(sources)
            # retries inside the call start no try, and sleep no backoff, past the plan's
            # own time limit
            deadline = call_deadline.set(state.started_at + state.limits.timeout_s)
            thread = abandoned_threads.start(name)
            state.abandonable[id(record)] = thread
            try:
                result = func(*record.args, **record.kwargs)
                if inspect.isawaitable(result):
                    result = self._await(result)
            finally:
                abandoned_threads.end(thread)
                state.abandonable.pop(id(record), None)
                call_deadline.reset(deadline)
                call_sources.reset(labelled)
                if state.abandoned:  # the plan ended without this call: its end is ignored
                    raise Cancelled if state.cancelled else Expired
            if plain_result:
                result, size = sized_plan_value(result, max_items=state.limits.max_size,
                                                where=f"{name}() result",
                                                budget=state.host_budget)
        except state.passthrough as exc:
            record.error = f"{type(exc).__name__}: {exc}"
            raise
        except (Expired, Cancelled):
            if not state.abandoned:
                record.error = "stopped"
            raise
        except NotPlainData as exc:
            record.error = f"TypeError: {exc}"
            raise TFCallError(str(exc), kind="TypeError") from None
        except OverflowError as exc:
            record.error = f"SizeLimitExceeded: {exc}"
            raise SizeLimitExceeded(str(exc)) from None
        except TFInterpreterError as exc:
            record.error = f"{exc.kind}: {exc.message}"
            if isinstance(exc, HostMemoryExceeded) and exc.budget is state.host_budget:
                raise  # the callee kept this run's values (a chain's intermediate results)
            if isinstance(exc, TFToolTimeout | TFToolUnavailable | TFApprovalDenied
                          | TFPolicyDenied):
                raise  # the call's own limit, a person's no or a policy's: it fails at the call
            raise TFCallError(f"{name}() failed: {exc.headline()}", kind=exc.kind) from exc
        except Exception as exc:
            record.error = f"{type(exc).__name__}: {exc}"
            raise _call_failed(name, exc) from exc
        else:
            try:
                state.host_budget.charge(size, f"{name}() result")
            except HostMemoryExceeded as exc:
                record.error = f"{exc.kind}: {exc.message}"
                raise
            record.result = result
            return result
        finally:
            try:
                # an abandoned call was reported as it was abandoned; its late end is not
                if not state.abandoned:
                    record.duration_s = time.perf_counter() - started
                    if state.observer is not None:
                        state.observer.on_call_end(record)
            finally:
                state.leave_host()

    def _await(self, awaitable: Awaitable[Any]) -> Any:
        import asyncio
        import concurrent.futures

        state = self.state
        if state.loop is None:  # a synchronous run's: made at its first async call
            state.loop = background_loop()
        loop = state.loop

        async def wait() -> Any:
            return await awaitable

        future = asyncio.run_coroutine_threadsafe(wait(), loop)
        with state.lock:
            state.active_futures.add(future)
            # a stop cancels this wait: the call is never abandoned, its task is cancelled
            state.calling.pop(threading.get_ident(), None)
            stopped = state.cancelled or state.expired
        if stopped:
            future.cancel()
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise Expired if state.expired and not state.cancelled else Cancelled from None
        finally:
            with state.lock:
                state.active_futures.discard(future)

    def construct_chain(self, **kwargs: Any) -> HostCallable:
        """``__construct_chain(...)`` in a plan: build a chain at run time (labels: see
        ``Tracker.construct``)."""
        hook = self.construct_hook
        if hook is None:
            raise NotImplementedError(
                "__construct_chain is not available: no chain layer is connected to this plan"
            )
        func = self.call("__construct_chain", hook, (), kwargs, plain_result=False,
                         sources=CallSources() if self.tracker is not None else None)
        self.constructed += 1
        name = kwargs.get("name") if isinstance(kwargs.get("name"), str) else None
        return HostCallable(name or f"constructed_chain_{self.constructed}", func, self)

    construct_chain.constructs_chains = True  # type: ignore[attr-defined]

    # -- parallel --------------------------------------------------------------------
    def parallel(self, *items: Any) -> list[Any]:
        """Evaluate ``parallel(...)``'s branches concurrently; results in argument order.

        The calling thread takes branches itself, helped by as many threads as the run's
        ``max_parallel`` still allows over every nesting level; a nested ``parallel`` with
        no thread to spare runs its branches in its own thread. A branch that has not
        started when the run stops, or when another branch failed, never starts.
        """
        state = self.state
        self.check_branches(len(items))
        if len(items) < 2 or not any(isinstance(item, Thunk) for item in items):
            return [item() if isinstance(item, Thunk) else item for item in items]
        charge = BRANCH_BYTES * len(items)
        state.host_budget.charge(charge, "parallel() branches")
        try:
            hooks = state.parallel_hooks
            tokens = self._hook(hooks.fork, len(items)) if hooks is not None \
                else [None] * len(items)
            branches = _Branches(self, items, tokens)
            for _ in range(state.reserve_threads(len(items) - 1)):
                threading.Thread(target=branches.help, name="tf_plan-branch",
                                 daemon=True).start()
            branches.work()
            branches.wait()
            if hooks is not None:
                self._hook(hooks.join, tokens)
        finally:
            state.host_budget.release(charge)
        failed = next((error for error in branches.errors if error is not None), None)
        if failed is None:
            return branches.results
        del branches
        try:
            raise failed
        finally:
            del failed  # a frame holding the error it raises is a cycle

    def check_branches(self, count: int) -> None:
        """Refuse a ``parallel(...)`` of ``count`` branches past ``max_branches``."""
        limit = self.state.limits.max_branches
        if count > limit:
            raise BranchLimitExceeded(
                f"parallel() with {count} branches: more than the limit of {limit} "
                "(max_branches)")

    def branches(self, thunks: Iterable[Any]) -> list[Any]:
        """``*[e for x in xs]`` in ``parallel(...)``: its thunks, taken one by one and
        refused once there are more than ``max_branches``, before more are made."""
        limit = self.state.limits.max_branches
        listed: list[Any] = []
        for thunk in thunks:
            if len(listed) >= limit:
                raise BranchLimitExceeded(
                    f"parallel() with more than the limit of {limit} branches (max_branches)")
            listed.append(thunk)
        return listed

    def run_branch(self, index: int, item: Any, token: Any) -> Any:
        """One branch, in whichever thread took it."""
        state = self.state
        outer = getattr(state.branch, "index", None)
        state.branch.index = index
        try:
            if state.parallel_hooks is not None:
                self._hook(state.parallel_hooks.enter, token)
            return item() if isinstance(item, Thunk) else item
        finally:
            state.branch.index = outer

    def _hook(self, method: Callable[..., Any], *args: Any) -> Any:
        """Run a ``ParallelHooks`` method as host code: no stop signal lands inside it."""
        self.state.enter_host()
        try:
            return method(*args)
        finally:
            self.state.leave_host()


class _Branches:
    """The branches of one ``parallel`` call, taken in order by the threads working on it."""

    def __init__(self, dispatcher: Dispatcher, items: Sequence[Any], tokens: list[Any]) -> None:
        self.dispatcher = dispatcher
        self.items = items
        self.tokens = tokens
        # each branch runs in a copy of the caller's context, whichever thread runs it
        self.contexts = [contextvars.copy_context() for _ in items]
        self.results: list[Any] = [None] * len(items)
        self.errors: list[BaseException | None] = [None] * len(items)
        self.next = 0
        self.running = 0
        self.failed = False  # once a branch failed, parallel() fails: start no more
        self.changed = threading.Condition()

    def _take(self) -> int | None:
        state = self.dispatcher.state
        with self.changed:
            if self.next >= len(self.items) or self.failed or state.stopping:
                return None
            self.next += 1
            self.running += 1
            return self.next - 1

    def _run(self, index: int) -> None:
        try:
            self.results[index] = self.contexts[index].run(
                self.dispatcher.run_branch, index, self.items[index], self.tokens[index])
        except BaseException as exc:
            self.errors[index] = exc
            self.failed = True
            raise
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def work(self) -> None:
        """Take branches in the calling thread until none is left."""
        while (index := self._take()) is not None:
            try:
                self._run(index)
            except (Expired, Cancelled):
                raise
            except BaseException:  # reported in argument order by parallel()
                continue

    def help(self) -> None:
        """A helper thread: take branches, then give the thread back to the run."""
        state = self.dispatcher.state
        state.add_plan_thread()
        try:
            self.work()
        except BaseException:  # a stop signal: the run is ending
            pass
        finally:
            state.remove_plan_thread()
            state.release_threads(1)

    def wait(self) -> None:
        """Until no branch is running; short waits, so a stop signal reaches this thread."""
        with self.changed:
            while self.running:
                self.changed.wait(0.05)
