"""Run plans: the public :class:`Interpreter`.

A run compiles the validated, rewritten plan (cached per source and callable names),
builds a fresh global namespace holding the guards, with ``__builtins__`` holding only
the allowlisted builtins and one opaque handle per registered callable (so plan names
shadow them as in Python), and executes it. Every run is driven from a thread of its own
while the caller (``run``'s thread, ``arun``'s task) waits for it under the plan's time
limit, so a call that never returns cannot hold the caller (see ``supervise.py``), and the
event loop stays free for async chains. With ``isolation="process"`` (the default) the
plan executes in a sandbox process and the driving thread relays its calls (see
``sandbox/``).
"""

from __future__ import annotations

import contextlib
import contextvars
import decimal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache, partial
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from dcbrain.tfplan.builtins import BUILTIN_NAMES, build_builtins
from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    Cancelled,
    Expired,
    NotPlainData,
    PlanCancelled,
    Problem,
    SizeLimitExceeded,
    TFCheckError,
    TFInterpreterError,
    TFRuntimeError,
    TFSyntaxError,
    TimeLimitExceeded,
)
from dcbrain.tfplan.guards import Guards
from dcbrain.tfplan.host import (
    Dispatcher,
    HostCallable,
    Thunk,
    code_position,
    current_run,
)
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.labels.provenance import TRACKING_MODES, Tracker, Tracking, tracking_namespace
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.messages import public_message, without_label_keyword
from dcbrain.tfplan.parser import (
    IMPORTABLE_MODULES,
    MAIN_FUNCTION,
    PLAN_FILENAME,
    Plan,
    shared_plan,
)
from dcbrain.tfplan.result import ConsoleResult
from dcbrain.tfplan.state import CallObserver, ParallelHooks, RunState, Watchdog
from dcbrain.tfplan.supervise import Supervision, abandon_calls, start_driver
from dcbrain.tfplan.values import bounded_message, sized_plan_value
from dcbrain.values.scalars import PLAN_DECIMAL_CONTEXT, decimal_error

if TYPE_CHECKING:
    import asyncio

    from dcbrain.tfplan.checker import CallableSpec

# A sandbox process only runs code compiled by its host: the checker, the rewriter and the
# host's side of the sandbox are imported by the functions that use them.


@lru_cache(maxsize=128)
def _compiled(source: str, host_names: frozenset[str],
              tracking: Tracking = "off") -> tuple[Plan, CodeType]:
    from dcbrain.tfplan.rewrite import compile_plan, module_globals

    plan = shared_plan(source)  # only read: it is kept for every run of the source
    try:
        provided = BUILTIN_NAMES | host_names
        code = compile_plan(source, provided, tracking=tracking, builtins=BUILTIN_NAMES,
                            bound=module_globals(plan.tree, provided, plan.child_nodes()))
    except SyntaxError as exc:
        problem = Problem(exc.lineno or 1, exc.offset or 1, exc.msg,
                          kind="SyntaxError")
        raise TFSyntaxError([problem], source) from None
    except (RecursionError, MemoryError):
        raise TFSyntaxError([Problem(1, 1, "plan is nested too deeply", "SyntaxError")],
                            source) from None
    return plan, code


#: Where a plan runs: in a sandbox process with OS limits, or in this process.
Isolation = Literal["process", "inprocess"]


def compile_source(
    source: str, host_names: frozenset[str] = frozenset(), tracking: Tracking = "off"
) -> tuple[Plan, CodeType]:
    """Parse, validate and compile ``source`` for a run whose registered callables are
    ``host_names`` and that tracks labels as ``tracking`` says (cached); raises
    :class:`TFSyntaxError`."""
    return _compiled(source, host_names, tracking)



#: Plans shorter than this are parsed, checked and compiled on the event loop (well under a
#: millisecond); longer ones in a worker thread, so the loop keeps serving other runs.
INLINE_COMPILE_CHARS = 2_000

_T = TypeVar("_T")


async def off_the_loop(source: str, work: Callable[..., _T], *args: Any) -> _T:
    """``work(*args)``, whose cost grows with ``source``: inline for a short source (a thread
    hop would cost more than the work), in a worker thread for a long one."""
    if len(source) < INLINE_COMPILE_CHARS:
        return work(*args)
    import asyncio

    return await asyncio.to_thread(work, *args)


class Interpreter:
    """Checks and runs tf_plan scripts against registered chains and tools.

    ``callables`` maps names to Python callables (sync or async); ``tools`` adds
    callables under their own ``name`` (or ``__name__``). A name of a tf_plan builtin
    (``dict``, ``print`` …) is refused with :class:`ValueError`: builtins come first. Every
    call a plan makes goes through one dispatch point that records it in the result's trace.

    ``isolation="process"`` (the default) runs each plan in a sandbox worker process
    with OS limits; the chains and tools still run here. ``"inprocess"`` runs the plan in
    this process: faster to start, for trusted plans and benchmarks.

    ``tracking`` (``"off"``, ``"on"``, ``"strict"``) makes every plan value carry its
    sources (see :mod:`dcbrain.tfplan.labels.provenance`); each call then sees its arguments'
    sources in :data:`~dcbrain.tfplan.labels.provenance.call_sources`. ``sources`` names the
    source of each callable's results (default ``tool:<name>``); ``trusted_fields`` the
    fields of a callable's result records that are trusted data (source
    ``<source>.<field>``).

    ``stop_asked`` is the caller's abort flag: once it says ``True`` no host call starts
    and the one running ends the plan as it returns (the caller cancels the run too; the
    flag makes the stop take effect before that cancellation reaches the plan).
    """

    dispatcher_class: ClassVar[type[Dispatcher]] = Dispatcher

    def __init__(
        self,
        callables: Mapping[str, Callable[..., Any]] | None = None,
        *,
        tools: Sequence[Callable[..., Any]] = (),
        limits: Limits | None = None,
        specs: Mapping[str, CallableSpec] | None = None,
        construct_chain: Callable[..., Callable[..., Any]] | None = None,
        observer: CallObserver | None = None,
        parallel_hooks: ParallelHooks | None = None,
        passthrough: tuple[type[BaseException], ...] = (),
        isolation: Isolation = "process",
        tracking: Tracking = "off",
        sources: Mapping[str, str] | None = None,
        trusted_fields: Mapping[str, Iterable[str]] | None = None,
        reads: Mapping[str, Iterable[str]] | None = None,
        stop_asked: Callable[[], bool] | None = None,
    ) -> None:
        if isolation not in ("process", "inprocess"):
            raise ValueError(f"isolation must be 'process' or 'inprocess', got {isolation!r}")
        if tracking not in TRACKING_MODES:
            raise ValueError(f"tracking must be one of {', '.join(TRACKING_MODES)}, "
                             f"got {tracking!r}")
        self.isolation: Isolation = isolation
        self.stop_asked = stop_asked
        self.tracking: Tracking = tracking
        self.callables: dict[str, Callable[..., Any]] = dict(callables or {})
        for tool in tools:
            name = str(getattr(tool, "name", None) or tool.__name__)
            if name in self.callables:
                from dcbrain.tfplan.origins import describe_callable

                raise ValueError(f"two callables are named {name!r}: "
                                 f"{describe_callable(name, self.callables[name])} and "
                                 f"{describe_callable(name, tool)}; rename one of them")
            self.callables[name] = tool
        for name in self.callables:
            if not name.isidentifier() or name.startswith("_"):
                raise ValueError(f"callable name {name!r} must be an identifier not starting "
                                 "with '_'")
            if name in BUILTIN_NAMES:
                # builtins come first: a callable of the same name would silently replace one
                raise ValueError(f"callable {name!r} clashes with the tf_plan builtin {name}; "
                                 "register it under another name")
        self.sources: dict[str, str] = {name: f"tool:{name}" for name in self.callables}
        self.sources.update(sources or {})
        self.trusted_fields: dict[str, list[str]] = {
            name: sorted(fields) for name, fields in (trusted_fields or {}).items() if fields}
        #: callable -> sources its results carry besides its arguments' (what a chain's
        #: prompts render, such as ``memory:conversation``)
        self.reads: dict[str, list[str]] = {
            name: sorted(found) for name, found in (reads or {}).items() if found}
        self.limits = limits or Limits()
        self._specs = dict(specs) if specs is not None else None
        self.construct_chain = construct_chain
        self.observer = observer
        self.parallel_hooks = parallel_hooks
        self.passthrough = passthrough

    @property
    def specs(self) -> dict[str, CallableSpec]:
        """Specs of the registered callables (given, or derived from their signatures)."""
        if self._specs is None:
            from dcbrain.tfplan.checker import specs_of

            self._specs = specs_of(self.callables)
        return self._specs

    def check(self, plan: Plan | str) -> list[Problem]:
        """Every static problem of ``plan`` against the registered callables; a plan with
        none is compiled too, so what Python's compiler refuses ('break' outside a loop,
        ``nonlocal`` without a binding) is reported before the plan runs."""
        from dcbrain.tfplan.checker import check

        problems = check(plan, self.specs, strict=self.tracking == "strict")
        if not problems:
            try:  # cached: the run reuses this compile
                compile_source(plan.source if isinstance(plan, Plan) else plan,
                               frozenset(self.callables), self.tracking)
            except TFSyntaxError as exc:
                problems = list(exc.problems)
        return problems

    def run(self, plan: Plan | str, *, check: bool = False,
            host_budget: HostBudget | None = None) -> ConsoleResult:
        """Run ``plan`` and wait for it (``check=True`` checks it statically first); a
        plan that can call chains or tools is driven from a thread of its own.

        ``host_budget`` is the run's budget of what the host keeps, when the caller keeps
        things for the run too (its chains' intermediate results), and closes it when the
        run is over; else a new one, whose share of the process's host budget is given
        back as the run ends.
        """
        parsed, code = self._prepare(plan, check)
        state = self._new_state(loop=None, host_budget=host_budget)
        try:
            return self._run_waiting(parsed, code, state)
        finally:
            if host_budget is None:  # the run's own: its share of the process's is free
                state.host_budget.close()

    def _run_waiting(self, parsed: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        """:meth:`run` once the plan is compiled and its state made."""
        if not self.callables and self.construct_chain is None:
            # no host call to wait for: the time limit stops plan code in this thread
            return self._run_here(parsed, code, state)
        handoff = _Handoff()
        self._start(parsed, code, state, handoff)
        supervision = Supervision(state, self.limits.timeout_s)
        try:
            while not handoff.done.wait(supervision.wait_s()):
                if supervision.overdue() and not handoff.done.is_set():
                    raise supervision.abandon(parsed.lines, self._process_stopper(state))
        except BaseException as exc:
            if not isinstance(exc, TimeLimitExceeded):  # interrupted: stop the plan
                self._stop_run(state)
            raise
        return handoff.outcome()  # type: ignore[no-any-return]

    async def arun(self, plan: Plan | str, *, check: bool = False,
                   host_budget: HostBudget | None = None) -> ConsoleResult:
        """Run ``plan`` in a worker thread; async callables run on the current event loop.

        Cancelling the awaiting task stops the plan at its next step. A plan longer than
        :data:`INLINE_COMPILE_CHARS` is checked and compiled in a worker thread too, so a
        large one never stalls the event loop.
        """
        import asyncio  # the async entry points import it: sandbox processes run without it

        source = plan.source if isinstance(plan, Plan) else plan
        parsed, code = await off_the_loop(source, self._prepare, plan, check)
        loop = asyncio.get_running_loop()
        state = self._new_state(loop=loop, host_budget=host_budget)
        try:
            return await self._arun_waiting(parsed, code, state, loop)
        finally:
            if host_budget is None:  # the run's own: its share of the process's is free
                state.host_budget.close()

    async def _arun_waiting(self, parsed: Plan, code: CodeType, state: RunState,
                            loop: asyncio.AbstractEventLoop) -> ConsoleResult:
        """:meth:`arun` once the plan is compiled and its state made."""
        import asyncio

        future: asyncio.Future[None] = loop.create_future()
        handoff = _Handoff(loop, future)
        self._start(parsed, code, state, handoff)
        supervision = Supervision(state, self.limits.timeout_s)
        try:
            while not future.done():
                await asyncio.wait((future,), timeout=supervision.wait_s())
                if not future.done() and supervision.overdue() and not future.done():
                    raise supervision.abandon(parsed.lines, self._process_stopper(state))
            return handoff.outcome()  # type: ignore[no-any-return]
        except asyncio.CancelledError:
            self._stop_run(state)  # it ends later with PlanCancelled, which no one takes
            raise

    # -- internals -------------------------------------------------------------------
    def _start(self, plan: Plan, code: CodeType, state: RunState, handoff: _Handoff) -> None:
        """Drive the run in a thread of its own, in a copy of the caller's context; its
        outcome (value or exception) goes to ``handoff``."""
        start_driver(partial(self._work, contextvars.copy_context(), plan, code, state, handoff))

    def _work(self, context: contextvars.Context, plan: Plan, code: CodeType, state: RunState,
              handoff: _Handoff) -> None:
        try:
            handoff.deliver(context.run(self._drive, plan, code, state), False)
        except BaseException as exc:  # handed to the waiting caller
            handoff.deliver(exc, True)

    def _drive(self, plan: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        current_run.set(state)  # the calls inherit it (call_may_finish)
        try:
            return self._run_here(plan, code, state)
        except TFInterpreterError as error:
            # stopped while other branches' calls ran: the plan ended without them
            if state.calling:
                error.abandoned_calls += len(abandon_calls(state, None))
            raise

    def _process_stopper(self, state: RunState) -> Callable[[], None] | None:
        if self.isolation != "process":
            return None
        from dcbrain.tfplan.sandbox.relay import cancel_in_sandbox

        return lambda: cancel_in_sandbox(state)

    def _stop_run(self, state: RunState) -> None:
        """The caller stopped waiting (a cancellation): stop the plan, abandon its calls."""
        state.stop(Cancelled)
        abandon_calls(state, self._process_stopper(state), ended=False)

    def _run_here(self, plan: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        """Run the plan from this thread: in a sandbox process, or right here."""
        if self.isolation == "process":
            from dcbrain.tfplan.sandbox.relay import run_in_sandbox

            return run_in_sandbox(self, plan, code, state)
        return self._execute(plan, code, state)

    def _prepare(self, plan: Plan | str, run_check: bool) -> tuple[Plan, CodeType]:
        source = plan.source if isinstance(plan, Plan) else plan
        parsed, code = compile_source(source, frozenset(self.callables), self.tracking)
        if run_check:
            problems = self.check(parsed)
            if problems:
                raise TFCheckError(problems, parsed.source)
        return parsed, code

    def _new_state(self, loop: asyncio.AbstractEventLoop | None,
                   host_budget: HostBudget | None = None) -> RunState:
        return RunState(
            limits=self.limits,
            loop=loop,
            observer=self.observer,
            parallel_hooks=self.parallel_hooks,
            passthrough=self.passthrough,
            stop_asked=self.stop_asked,
            shared_budget=host_budget,
        )

    def _namespace(self, plan: Plan, state: RunState) -> tuple[dict[str, Any], Guards]:
        guards = Guards(state)
        tracker = Tracker(self.sources, self.tracking == "strict", self.trusted_fields,
                          self.reads) \
            if self.tracking != "off" else None
        dispatcher = self.dispatcher_class(state, plan.lines, self.construct_chain, tracker)
        # builtins and registered callables sit under the plan's own names, as in Python
        builtins = build_builtins(guards)
        builtins["__construct_chain"] = dispatcher.construct_chain
        for name, func in self.callables.items():
            builtins[name] = HostCallable(name, func, dispatcher)
        namespace: dict[str, Any] = {"__builtins__": builtins, "__name__": "__main__"}
        namespace.update(guards.namespace())
        namespace["__tf_parallel"] = dispatcher.parallel
        namespace["__tf_thunk"] = Thunk
        namespace["__tf_branches"] = dispatcher.branches
        namespace["__tf_modules"] = {name: builtins[name] for name in IMPORTABLE_MODULES}
        if tracker is not None:
            namespace.update(tracking_namespace(tracker))
        return namespace, guards

    def _execute(self, plan: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        try:
            result = self._execute_plan(plan, code, state)
            if state.expired:  # a single long C-level operation outlived the deadline
                raise Expired
        except BaseException as exc:
            _stop(state, None)  # no stop signal may land while the error is built
            error = self._translate(exc, plan)
            if error is None:
                raise
            error.stdout = state.stdout
            error.trace = list(state.trace)
            cause = None if error is exc or isinstance(exc, Expired | Cancelled) else exc
            try:
                raise error from cause
            finally:
                del error, cause  # (a frame holding the error it raises is a cycle)
        return result

    def _execute_plan(self, plan: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        namespace, guards = self._namespace(plan, state)
        watchdog = Watchdog(state, self.limits.timeout_s)
        started = time.perf_counter()
        state.add_plan_thread()
        try:
            watchdog.start()
            # the plan's decimal context, whatever the host's: one operation stays small
            with decimal.localcontext(PLAN_DECIMAL_CONTEXT):
                exec(code, namespace)
                returned, value = namespace[MAIN_FUNCTION]()
            return ConsoleResult(
                value=_plain(value, state),
                stdout=state.stdout,
                trace=list(state.trace),
                operations=guards.budget.operations(),
                duration_s=time.perf_counter() - started,
                returned=bool(returned),
            )
        finally:
            _stop(state, watchdog)
            # plan functions and their globals form a cycle, and so do the builtins and
            # the run's guards they are bound to: free both now
            builtins = namespace["__builtins__"]
            namespace.clear()
            builtins.clear()
            guards.release()

    def _translate(self, exc: BaseException, plan: Plan) -> TFInterpreterError | None:
        """The error the planner sees for ``exc``, or ``None`` when it must pass through."""
        if isinstance(exc, self.passthrough):
            return None
        if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
            return None
        # too deep: the innermost frame is the callee's entry; the caller's call is the cause
        at_call = isinstance(exc, CallDepthLimitExceeded | RecursionError)
        line, col, in_main = _locate(exc.__traceback__, plan.lines, at_call)
        error: TFInterpreterError
        if isinstance(exc, Expired):
            error = TimeLimitExceeded(f"plan ran longer than its limit of "
                                      f"{self.limits.timeout_s:g} s")
        elif isinstance(exc, Cancelled):
            error = PlanCancelled("plan was cancelled")
        elif isinstance(exc, TFInterpreterError):
            error = exc
        elif isinstance(exc, RecursionError):
            error = CallDepthLimitExceeded("plan recursed too deeply")
        elif isinstance(exc, MemoryError):
            error = SizeLimitExceeded("plan ran out of memory")
        elif isinstance(exc, decimal.DecimalException):
            kind, message = decimal_error(exc)
            error = TFRuntimeError(message, kind=kind)
        elif isinstance(exc, UnboundLocalError) and in_main:  # a top-level fast local
            name = str(exc).split("'")[1] if "'" in str(exc) else "?"
            error = TFRuntimeError(f"name {name!r} is not defined", kind="NameError")
        elif isinstance(exc, Exception):
            kind = type(exc).__name__
            message = bounded_message(exc)
            if self.tracking != "off" and kind == "TypeError":
                message = without_label_keyword(message)
            error = TFRuntimeError(public_message(message, kind), kind=kind)
        else:
            return None
        source_line = plan.lines[line - 1] if 0 < line <= len(plan.lines) else None
        return error.with_position(line, col, source_line)


class _Handoff:
    """A plan run's outcome, handed from its driver thread to the caller waiting for it:
    ``done`` is set (a sync caller) or ``future`` is resolved on ``loop`` (an async one).

    The outcome is held here until taken, not in the future or in closures: the functions
    the run's frames refer to then hold nothing of the run, and a failed run's error, its
    traceback and the frames' run are freed by reference counting once the caller lets go.
    """

    __slots__ = ("_failed", "_future", "_loop", "_value", "done")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None,
                 future: asyncio.Future[None] | None = None) -> None:
        self.done = threading.Event()
        self._loop = loop
        self._future = future
        self._value: Any = None
        self._failed = False

    def deliver(self, value: Any, failed: bool) -> None:
        """From the driver thread: the run ended with ``value`` (raised it, ``failed``)."""
        self._value, self._failed = value, failed
        self.done.set()
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed after a cancellation
                self._loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)
        self._future = self._loop = None

    def outcome(self) -> Any:
        """The run's value, or its error raised; taken once (nothing is kept here)."""
        value, self._value = self._value, None
        if not self._failed:
            return value
        try:
            raise value
        finally:
            del value  # the raising frame must not hold its own error


def _stop(state: RunState, watchdog: Watchdog | None) -> None:
    """Make sure no stop signal reaches this thread once the plan is over."""
    while True:
        try:
            state.finish()
            if watchdog is not None:
                watchdog.stop()
            state.remove_plan_thread()
            return
        except (Expired, Cancelled):
            continue


def _locate(
    tb: TracebackType | None, lines: Sequence[str], caller: bool
) -> tuple[int, int, bool]:
    """Position in the innermost plan frame of ``tb`` (or in its caller's, with ``caller``),
    and whether the innermost plan frame is the plan's top level."""
    found: list[TracebackType] = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PLAN_FILENAME:
            found = [*found[-1:], tb]
        tb = tb.tb_next
    if not found:
        return 0, 0, False
    frame = found[0] if caller else found[-1]
    line, col = code_position(frame.tb_frame.f_code, frame.tb_lasti, lines)
    return line, col, found[-1].tb_frame.f_code.co_name == MAIN_FUNCTION


def _plain(value: Any, state: RunState) -> Any:
    """The plan's value as the host keeps it (paid for from the run's host budget)."""
    try:
        plain, size = sized_plan_value(value, max_items=state.limits.max_size,
                                       where="plan result", budget=state.host_budget)
    except (NotPlainData, OverflowError):
        if isinstance(value, HostCallable):
            return f"<callable {value.name}>"
        return f"<{type(value).__name__}>"
    state.host_budget.charge(size, "plan result")
    return plain
