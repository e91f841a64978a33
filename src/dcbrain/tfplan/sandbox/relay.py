"""The host side of a plan running in a sandbox process.

The run's driving thread (see ``tfplan/supervise.py``) sends the plan to a worker and
then serves the worker's requests: a call of the top level runs right here, as it would
in process; a call from a ``parallel``
branch runs in a thread of its own in that branch's context, so branches overlap.
Calls go through the same :class:`~dcbrain.tfplan.host.Dispatcher` as in process: the
same trace records, observer callbacks, limits, boundary copies and errors.

At the plan's time limit the worker's own watchdog stops it with a positioned error;
if it does not within :data:`GRACE_S` (a long C call holds its only lock), the worker
is killed and the plan ends with :class:`TimeLimitExceeded` at the line the process
reported when asked, or at its last call. A call still running at the time limit is
cancelled or abandoned by the run's supervision, which then kills the worker. A worker
that dies ends the plan with :class:`PlanProcessCrashed`.
"""

from __future__ import annotations

import contextlib
import contextvars
import marshal
import os
import re
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import CodeType
from typing import TYPE_CHECKING, Any, NoReturn

from dcbrain.tfplan import errors
from dcbrain.tfplan.errors import (
    HostMemoryExceeded,
    MessageTooLarge,
    PlanCancelled,
    PlanProcessCrashed,
    TFCallError,
    TFInterpreterError,
    TFRuntimeError,
    TimeLimitExceeded,
)
from dcbrain.tfplan.host import BRANCH_BYTES, Dispatcher
from dcbrain.tfplan.labels.provenance import CallSources
from dcbrain.tfplan.parser import PLAN_FILENAME, Plan
from dcbrain.tfplan.result import CallRecord, ConsoleResult
from dcbrain.tfplan.sandbox._wire import MAX_MESSAGE_BYTES, WORKER_RECORD_FIELDS, ChannelClosed
from dcbrain.tfplan.sandbox.pool import Worker, WorkerPool, shared_pool
from dcbrain.tfplan.state import Cancelled, Expired, RunState
from dcbrain.tfplan.values import NotPlainData, sized_plan_value

if TYPE_CHECKING:
    from dcbrain.tfplan.interpreter import Interpreter

#: Time a plan's own watchdog gets after the time limit before its process is killed.
GRACE_S = 0.5
#: Longest wait for a process's report of where it was when stopped.
REPORT_WAIT_S = 0.5
_POLL_S = 0.05
#: Bytes a message from the worker may hold beyond twice the run's ``max_host_mb``.
MESSAGE_SLACK = 2**20
#: How long each end polls for the other's next message, after answering or asking,
#: before it sleeps on the socket: a plan's next call, and the host's answer to a quick
#: call, often come within tens of microseconds, about what waking a sleeping process up
#: costs. Only while fewer sandbox runs than processors are active (:func:`_spin_s`): on
#: a busy machine the processor is better given to the runs.
SPIN_S = 50e-6
#: Concurrent calls of ``parallel`` branches of one plan served at once.
_BRANCH_CALLS = 64

_ERROR_CLASSES: dict[str, type[TFInterpreterError]] = {
    name: cls for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, TFInterpreterError)
    and not issubclass(cls, errors.TFProblemsError)
}

_running: dict[int, _Relay] = {}
_PROCESSORS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
_running_lock = threading.Lock()


def run_in_sandbox(interpreter: Interpreter, plan: Plan, code: CodeType,
                   state: RunState) -> ConsoleResult:
    """Run ``plan`` (compiled to ``code``) in a sandbox worker, serving its calls here."""
    pool = shared_pool()
    # waiting for a busy worker to come free takes a small part of the plan's time at most
    worker = pool.acquire(interpreter.limits.memory_bytes,
                          patience=interpreter.limits.timeout_s / 10)
    relay = _Relay(interpreter, plan, code, state, pool, worker)
    with _running_lock:
        _running[id(state)] = relay
    try:
        return relay.execute()
    finally:
        with _running_lock:
            _running.pop(id(state), None)
        relay.close()


def _spin_s() -> float:
    """How long to poll for the other end's next message now (:data:`SPIN_S`, or 0 while
    as many sandbox runs as processors are active)."""
    return SPIN_S if len(_running) < _PROCESSORS else 0.0


def cancel_in_sandbox(state: RunState) -> None:
    """Kill the worker running the plan of ``state`` (its run was cancelled)."""
    with _running_lock:
        relay = _running.get(id(state))
    if relay is not None:
        relay.cancel()


class _Relay:
    def __init__(self, interpreter: Interpreter, plan: Plan, code: CodeType, state: RunState,
                 pool: WorkerPool, worker: Worker) -> None:
        self.interpreter = interpreter
        self.plan = plan
        self.code = code
        self.state = state
        self.pool = pool
        self.worker = worker
        self.limits = interpreter.limits
        self.dispatcher = Dispatcher(state, plan.lines, interpreter.construct_chain)
        self.callables: dict[str | int, Callable[..., Any]] = {
            name: func for name, func in interpreter.callables.items()
        }
        if interpreter.construct_chain is not None:
            self.callables["__construct_chain"] = interpreter.construct_chain
        self.failures: dict[int, tuple[BaseException, int, int]] = {}
        # scope 0 is the top level: the context of this thread; branches get copies
        self.scopes: dict[int, tuple[contextvars.Context | None, Any]] = {0: (None, None)}
        self.last_scope = 0
        self.position = (0, 0)
        self.inflight = 0
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None
        self.cancelled = False
        self.settled = False
        #: cancel (any thread) and settle (the run's) exclude each other: a worker handed
        #: back to the pool is another run's, and a kill meant for this one must miss it
        self._settle_lock = threading.Lock()

    # -- the run -----------------------------------------------------------------------
    def execute(self) -> ConsoleResult:
        limits = self.limits
        deadline = time.monotonic() + limits.timeout_s
        request = {"source": self.plan.source, "code": marshal.dumps(self.code),
                   "limits": limits,
                   "names": list(self.interpreter.callables),
                   "tracking": self.interpreter.tracking,
                   "sources": dict(self.interpreter.sources),
                   "trusted_fields": dict(self.interpreter.trusted_fields),
                   "reads": dict(self.interpreter.reads),
                   "construct": self.interpreter.construct_chain is not None,
                   "spin_s": _spin_s()}
        channel = self.worker.channel
        # a message may hold no more than the run may keep (pickles are no larger than
        # the values they make), and is refused from its header, before it is read
        channel.max_message = min(MAX_MESSAGE_BYTES, 2 * limits.host_bytes + MESSAGE_SLACK)
        try:
            channel.send(("run", request))
        except ChannelClosed:
            self._ended()
        spin = 0.0  # the plan is starting: its first call is not due within microseconds
        while True:
            now = time.monotonic()
            if now >= deadline:
                if not self.state.expired:  # calls from now on are refused; running ones finish
                    self.state.stop(Expired)
                if now >= deadline + GRACE_S and self.inflight == 0:
                    self._time_is_up()
            try:
                message = channel.recv(_POLL_S, spin_s=spin)
            except TimeoutError:
                spin = 0.0
                continue
            except MessageTooLarge as refused:
                self._too_large(refused)
            except ChannelClosed:
                self._ended()
            kind = message[0] if type(message) is tuple and message else None
            if kind == "done" and len(message) == 2 and type(message[1]) is dict:
                return self._done(message[1])
            try:
                if kind == "call":
                    self._call(*message[1:])
                    spin = _spin_s()
                elif kind == "fork":
                    self._fork(*message[1:])
                elif kind == "join":
                    self._join(*message[1:])
                else:
                    raise ValueError(kind)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                self._misbehaved()

    def cancel(self) -> None:
        with self._settle_lock:
            self.cancelled = True
            if not self.settled:  # else the plan ended and its worker is the pool's again
                self.pool.signal(self.worker, signal.SIGKILL)

    def close(self) -> None:
        # a failed call's error passed through the frames that hold this relay: kept here,
        # it and the run would wait for the cyclic collector
        self.failures.clear()
        if not self.settled:  # left by an unexpected error: the worker may be mid-plan
            self._settle(reuse=False)
        if self.executor is not None:
            self.executor.shutdown(wait=False)

    def _settle(self, *, reuse: bool) -> None:
        """Hand the worker back to the pool (``reuse``, unless it was sent a kill) or have
        it killed and replaced."""
        with self._settle_lock:
            if self.settled:
                return
            self.settled = True
            if reuse and not self.cancelled:
                self.pool.release(self.worker)
            else:
                self.pool.discard(self.worker)

    # -- requests ----------------------------------------------------------------------
    def _call(self, call_id: int, target: str | int, wire: dict[str, Any], args: list[Any],
              kwargs: dict[str, Any], scope: int) -> None:
        line, col = wire.get("line"), wire.get("col")
        if isinstance(line, int) and isinstance(col, int):
            self.position = (line, col)
        if scope == 0:
            self.worker.in_host_since = time.monotonic()  # the pool sees it wait
            try:
                answer = self._invoke(call_id, target, wire, args, kwargs)
            finally:
                self.worker.in_host_since = None
            self._reply(call_id, *answer)
            return
        context = self.scopes[scope][0]
        if context is None or type(call_id) is not int:
            raise ValueError("unknown scope")
        if self.executor is None:
            self.executor = ThreadPoolExecutor(_BRANCH_CALLS, thread_name_prefix="tf_plan-host")
        with self.lock:
            self.inflight += 1
        self.executor.submit(self._branch_call, context, call_id, target, wire, args, kwargs)

    def _branch_call(self, context: contextvars.Context, call_id: int, target: str | int,
                     wire: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> None:
        try:
            status, value = context.run(self._invoke, call_id, target, wire, args, kwargs)
        except RuntimeError as exc:  # the branch's context is busy: the worker misbehaves
            self.failures[call_id] = (exc, 0, 0)
            status, value = "failed", call_id
        with self.lock:  # before the answer: the worker may end its plan right after it
            self.inflight -= 1
        self._reply(call_id, status, value)

    def _invoke(self, call_id: int, target: str | int, wire: dict[str, Any], args: list[Any],
                kwargs: dict[str, Any]) -> tuple[str, Any]:
        """Run one call through the dispatcher; the answer for the worker."""
        dispatcher = self.dispatcher
        record_fields = {key: value for key, value in wire.items()
                         if key in WORKER_RECORD_FIELDS and type(value) in (int, str, type(None))}
        line, col = record_fields.get("line", 0), record_fields.get("col", 0)
        try:
            func = self.callables.get(target)
            if func is None or not isinstance(args, list) or not isinstance(kwargs, dict):
                raise TypeError(f"no callable {target!r}")
            if isinstance(target, str):
                record_fields["name"] = target
            elif not isinstance(record_fields.get("name"), str):
                record_fields["name"] = "constructed_chain"
            sources = None if wire.get("sources") is None \
                else CallSources.from_wire(wire["sources"])
            dispatcher.count_call()
            args, kwargs = dispatcher.plain_arguments(record_fields["name"], args, kwargs)
            record = CallRecord(args=args, kwargs=kwargs, started_at=time.time(),
                                **record_fields)
            result = dispatcher.invoke(record, func, sources=sources,
                                       plain_result=target != "__construct_chain")
        except Expired:
            return "expired", None
        except Cancelled:
            return "cancelled", None
        except BaseException as exc:  # the plan ends with it, as it would in process
            self.failures[call_id] = (exc, line, col)
            return "failed", call_id
        if target == "__construct_chain":
            handle = len(self.callables) + 1
            self.callables[handle] = result
            return "handle", handle
        return "ok", result

    def _fork(self, request_id: int, scope: int, count: int) -> None:
        parent = self.scopes[scope][0]
        if type(count) is not int or count < 0:
            raise ValueError("bad branch count")
        try:  # refused before any scope is built
            self.dispatcher.check_branches(count)
            self.state.host_budget.charge(BRANCH_BYTES * count, "parallel() branches")
        except TFInterpreterError as exc:
            self.failures[request_id] = (exc, *self.position)
            self._reply(request_id, "failed", request_id)
            return
        hooks = self.interpreter.parallel_hooks

        def fork() -> tuple[list[Any], list[contextvars.Context]]:
            tokens = hooks.fork(count) if hooks is not None else [None] * count
            return list(tokens), [contextvars.copy_context() for _ in range(count)]

        try:
            tokens, contexts = parent.run(fork) if parent is not None else fork()
            scopes = []
            for token, context in zip(tokens, contexts, strict=True):
                if hooks is not None:
                    context.run(hooks.enter, token)
                self.last_scope += 1
                self.scopes[self.last_scope] = (context, token)
                scopes.append(self.last_scope)
        except Exception as exc:
            self.failures[request_id] = (exc, *self.position)
            self._reply(request_id, "failed", request_id)
            return
        self._reply(request_id, "ok", scopes)

    def _join(self, request_id: int, scope: int, scopes: Sequence[int]) -> None:
        parent = self.scopes[scope][0]
        tokens = [self.scopes.pop(branch)[1] for branch in scopes]
        self.state.host_budget.release(BRANCH_BYTES * len(tokens))
        hooks = self.interpreter.parallel_hooks
        try:
            if hooks is not None:
                if parent is not None:
                    parent.run(hooks.join, tokens)
                else:
                    hooks.join(tokens)
        except Exception as exc:
            self.failures[request_id] = (exc, *self.position)
            self._reply(request_id, "failed", request_id)
            return
        self._reply(request_id, "ok", None)

    def _reply(self, request_id: int, status: str, value: Any) -> None:
        with contextlib.suppress(ChannelClosed):  # a gone worker: the relay loop reports it
            self.worker.channel.send(("reply", request_id, status, value))

    # -- endings -----------------------------------------------------------------------
    def _done(self, outcome: dict[str, Any]) -> ConsoleResult:
        with self.lock:
            unanswered = self.inflight
        # A plan stopped by its deadline or a cancellation ends without waiting for the
        # calls of its other branches (as in process); only such an ending leaves any.
        if unanswered and "error" not in outcome:
            self._misbehaved()
        stdout = _text(outcome.get("stdout"))
        if "value" in outcome:
            self._settle(reuse=True)
            try:
                value = _plain(outcome["value"], self.state)
            except HostMemoryExceeded as refused:
                self._raise(refused, *self.position, stdout)
            return ConsoleResult(
                value=value,
                stdout=stdout,
                trace=list(self.state.trace),
                operations=_number(outcome.get("operations")),
                duration_s=_seconds(outcome.get("duration_s")),
                returned=outcome.get("returned") is True,
            )
        if "failed_call" in outcome:
            call_id = outcome["failed_call"]
            failure = self.failures.pop(call_id, None) if type(call_id) is int else None
            if failure is None:
                self._misbehaved()
            self._settle(reuse=True)
            exc, line, col = failure
            del failure
            try:
                if isinstance(exc, self.state.passthrough) or not isinstance(exc, Exception):
                    raise exc
                self._raise(exc if isinstance(exc, TFInterpreterError) else TFCallError(
                    str(exc), kind=type(exc).__name__), line, col, stdout)
            finally:
                del exc  # a frame holding the error it raises is a cycle
        report = outcome.get("error")
        if not isinstance(report, dict):
            self._misbehaved()
        # threads of the process still wait for the unanswered calls: it runs no other plan
        self._settle(reuse=not (outcome.get("retire") or unanswered))
        cls = _ERROR_CLASSES.get(_text(report.get("class")), TFRuntimeError)
        error = cls(_text(report.get("message")), kind=_text(report.get("kind")) or None)
        self._raise(error, _number(report.get("line")), _number(report.get("col")), stdout)

    def _time_is_up(self) -> NoReturn:
        self.pool.signal(self.worker, signal.SIGUSR1)  # faulthandler: where is each thread
        report = self._read_report()
        self._settle(reuse=False)
        line, col = _reported_position(report, self.plan.lines) or self.position
        self._raise(TimeLimitExceeded(f"plan ran longer than its limit of "
                                      f"{self.limits.timeout_s:g} s"), line, col, "")

    def _ended(self) -> NoReturn:
        """The worker's socket closed: it was killed or it crashed."""
        status = self.pool.wait_exit(self.worker, 5.0)
        report = self.worker.read_report()
        self._settle(reuse=False)
        if self.cancelled:
            raise PlanCancelled("plan was cancelled")
        line, col = _reported_position(report, self.plan.lines) or self.position
        error: TFInterpreterError
        if status is None:
            error = PlanProcessCrashed("plan process crashed")
        elif _signal_of(status) == signal.SIGXCPU:
            error = TimeLimitExceeded("plan used up its CPU time")
        elif _signal_of(status):
            error = PlanProcessCrashed(f"plan process crashed: signal {_signal_of(status)}")
        else:
            error = PlanProcessCrashed(f"plan process exited with status {status >> 8}")
        self._raise(error, line, col, "")

    def _too_large(self, refused: MessageTooLarge) -> NoReturn:
        """The worker sent more than the run may keep: the plan ends, the worker is
        replaced (its stream cannot be read on)."""
        self._settle(reuse=False)
        line, col = self.position
        error = self.state.host_budget.refusal(
            f"a message of {refused.size} bytes from the plan process", "max_host_mb")
        self._raise(error, line, col, "")

    def _misbehaved(self) -> NoReturn:
        self._settle(reuse=False)
        line, col = self.position
        self._raise(PlanProcessCrashed("plan process sent an invalid message"), line, col, "")

    def _raise(self, error: TFInterpreterError, line: int, col: int, stdout: str) -> NoReturn:
        lines = self.plan.lines
        source_line = lines[line - 1] if 0 < line <= len(lines) else None
        error = error.with_position(line, col, source_line)
        error.stdout = stdout
        error.trace = list(self.state.trace)
        try:
            raise error from None
        finally:
            del error  # a frame holding the error it raises is a cycle

    def _read_report(self) -> str:
        """What the worker wrote to its report pipe within :data:`REPORT_WAIT_S`."""
        chunks: list[str] = []
        deadline = time.monotonic() + REPORT_WAIT_S
        while (remaining := deadline - time.monotonic()) > 0:
            wait = 0.05 if chunks else remaining
            ready, _, _ = select.select([self.worker.report], [], [], wait)
            if not ready:
                if chunks:
                    break
                continue
            text = self.worker.read_report()
            if not text:
                break
            chunks.append(text)
        return "".join(chunks)


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)')


def _reported_position(report: str, lines: Sequence[str]) -> tuple[int, int] | None:
    """Where the plan was in a faulthandler report: the innermost plan frame of the thread
    that was running plan code (not waiting for the host)."""
    best: tuple[int, int] | None = None
    for block in re.split(r"\n(?=(?:Current thread|Thread) 0x)", report):
        waiting = False
        for text in block.splitlines():
            match = _FRAME.match(text)
            if match is None:
                continue
            if match["file"] != PLAN_FILENAME:
                waiting = waiting or match["file"].endswith(("_worker.py", "threading.py"))
                continue
            line = int(match["line"])
            source = lines[line - 1] if 0 < line <= len(lines) else ""
            position = (line, len(source) - len(source.lstrip()) + 1)
            if not waiting:
                return position
            best = best or position
            break
    return best


def _signal_of(status: int) -> int:
    return status & 0x7F if (status & 0x7F) not in (0, 0x7F) else 0


def _plain(value: Any, state: RunState) -> Any:
    """The plan's value as the host keeps it (paid for from the run's host budget)."""
    try:
        plain, size = sized_plan_value(value, max_items=state.limits.max_size,
                                       where="plan result", budget=state.host_budget)
    except (NotPlainData, OverflowError, RecursionError):
        return f"<{type(value).__name__}>"
    state.host_budget.charge(size, "plan result")
    return plain


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> int:
    return value if type(value) is int else 0


def _seconds(value: Any) -> float:
    return value if type(value) is float else 0.0
