"""Inside a sandbox process: run plans sent by the host, asking the host for every call.

The plan runs with the in-process interpreter (same guards, same errors, same positions).
Its chains and tools are stand-ins that send the call to the host and wait for the
answer; ``parallel`` branches announce themselves to the host, which runs the branch's
calls concurrently and applies the ``ParallelHooks`` there.
"""

from __future__ import annotations

import ast
import contextvars
import faulthandler
import marshal
import resource
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from types import CodeType
from typing import Any

from dcbrain.tfplan.errors import HostCallFailed, TFInterpreterError
from dcbrain.tfplan.host import Dispatcher, caller_position
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.interpreter import Interpreter
from dcbrain.tfplan.labels.provenance import CallSources, Tracking, call_sources, unknown_sources
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.parser import Plan
from dcbrain.tfplan.result import ConsoleResult
from dcbrain.tfplan.sandbox._wire import Channel, ChannelClosed
from dcbrain.tfplan.state import Cancelled, Expired, RunState

#: Scope of the calling thread: 0 at top level, else the host's id of its ``parallel`` branch.
_scope: contextvars.ContextVar[int] = contextvars.ContextVar("tf_sandbox_scope", default=0)


class _Requests:
    """Requests to the host; whichever waiting thread reads hands the others their answers."""

    def __init__(self, channel: Channel, spin_s: float) -> None:
        self.channel = channel
        self.spin_s = spin_s  # how long to poll for an answer before sleeping on the socket
        self._ids = 0
        self._lock = threading.Lock()
        self._answered = threading.Condition(self._lock)
        self._answers: dict[int, tuple[str, Any]] = {}
        self._reading = False
        self._asked: set[int] = set()

    @property
    def unanswered(self) -> bool:
        """Whether a request was sent whose answer no thread took (the plan stopped first)."""
        with self._lock:
            return bool(self._asked)

    def ask(self, kind: str, *payload: Any) -> tuple[str, Any]:
        with self._lock:
            self._ids += 1
            request_id = self._ids
            self._asked.add(request_id)
        self.channel.send((kind, request_id, *payload))
        with self._answered:
            while request_id not in self._answers:
                if self._reading:
                    self._answered.wait()
                    continue
                self._reading = True
                self._lock.release()
                try:
                    _, answer_id, status, value = self.channel.recv(spin_s=self.spin_s)
                finally:
                    self._lock.acquire()
                    self._reading = False
                self._answers[answer_id] = (status, value)
                self._answered.notify_all()
            self._asked.discard(request_id)
            return self._answers.pop(request_id)


class _Remote:
    """Stand-in for a chain or tool of the host (``target``: its name or a handle)."""

    __slots__ = ("requests", "target")

    def __init__(self, target: str | int, requests: _Requests) -> None:
        self.target = target
        self.requests = requests

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fields: dict[str, Any] = {}
        sources = call_sources.get()
        if sources is not None:
            fields["sources"] = sources.to_wire()
        return self.ask(fields, list(args), kwargs)

    def ask(self, fields: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        """The host's answer to a call with ``fields`` of its record (name, position …)."""
        status, value = self.requests.ask("call", self.target, fields, args, kwargs,
                                          _scope.get())
        if status == "ok":
            return value
        if status == "handle":
            return _Remote(value, self.requests)
        if status == "failed":
            raise HostCallFailed(value)
        raise Cancelled if status == "cancelled" else Expired


class _RemoteHooks:
    """``parallel`` branches as scopes of the host (the host runs the real hooks)."""

    def __init__(self, requests: _Requests) -> None:
        self.requests = requests

    def fork(self, count: int) -> list[Any]:
        return list(self._ask("fork", count))

    def enter(self, token: Any) -> None:
        _scope.set(token)

    def join(self, tokens: list[Any]) -> None:
        self._ask("join", tokens)

    def _ask(self, kind: str, payload: Any) -> Any:
        status, value = self.requests.ask(kind, _scope.get(), payload)
        if status == "failed":
            raise HostCallFailed(value)
        return value


class _WorkerDispatcher(Dispatcher):
    """The worker's dispatch point: a call of a stand-in goes straight to the host.

    It is counted against ``max_calls``, its arguments are copied as plain data (paid for
    from the run's host budget) and it is positioned, as in process; then the host runs it
    through its own dispatcher, which keeps the trace, tells the observers, applies the
    policies and copies the arguments and the result again at its boundary. No trace is
    kept here (nothing reads it), and the answer is not copied again: the host made it
    from its own checked copy of the result, and this process unpickled it into fresh
    values.
    """

    def call(self, name: str, func: Callable[..., Any], args: Sequence[Any],
             kwargs: dict[str, Any], *, plain_result: bool = True,
             sources: CallSources | None = None) -> Any:
        if type(func) is not _Remote:
            return super().call(name, func, args, kwargs, plain_result=plain_result,
                                sources=sources)
        self.count_call()
        args_copy, kwargs_copy = self.plain_arguments(name, args, kwargs)
        line, col = caller_position(self.lines)
        state = self.state
        fields: dict[str, Any] = {"name": name, "line": line, "col": col,
                                  "branch": getattr(state.branch, "index", None)}
        tracker = self.tracker
        if tracker is not None:
            if sources is None:
                sources = unknown_sources(tracker)
            fields["sources"] = sources.to_wire()
        state.enter_host()  # no stop signal lands while the host answers
        try:
            result = func.ask(fields, args_copy, kwargs_copy)
        finally:
            state.leave_host()
        if tracker is not None and sources is not None:
            tracker.record(name, sources)
        return result


class _WorkerInterpreter(Interpreter):
    # ``parallel`` starts at most ``max_parallel`` threads per run over every nesting
    # level (host.Dispatcher.parallel); the worker runs one plan at a time.

    dispatcher_class = _WorkerDispatcher

    def _execute(self, plan: Plan, code: CodeType, state: RunState) -> ConsoleResult:
        try:
            return super()._execute(plan, code, state)
        except HostCallFailed as failed:
            failed.stdout = state.stdout
            raise


def prepare() -> None:
    """Set up what needs new file descriptors, before the limits forbid them."""
    faulthandler.enable(file=2, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=2, all_threads=True, chain=False)


def serve(sock: socket.socket) -> None:
    """Run plans from the host until it closes the socket."""
    channel = Channel(sock, trusted=True)
    while True:
        try:
            message = channel.recv()
        except ChannelClosed:
            return
        if message[0] == "run":
            channel.send(("done", _run(channel, **message[1])))


def _run(channel: Channel, *, source: str, code: bytes, limits: Limits, names: list[str],
         construct: bool, tracking: Tracking, sources: dict[str, str],
         trusted_fields: dict[str, list[str]], reads: dict[str, list[str]],
         spin_s: float = 0.0) -> dict[str, Any]:
    requests = _Requests(channel, spin_s)
    callables: dict[str, Callable[..., Any]] = {name: _Remote(name, requests) for name in names}
    construct_chain = _Remote("__construct_chain", requests) if construct else None
    interpreter = _WorkerInterpreter(
        callables, limits=limits, isolation="inprocess", construct_chain=construct_chain,
        parallel_hooks=_RemoteHooks(requests), passthrough=(HostCallFailed,),
        tracking=tracking, sources=sources, trusted_fields=trusted_fields, reads=reads,
    )
    _set_cpu_limit(limits.timeout_s)
    try:
        plan = Plan(source, ast.Module(body=[], type_ignores=[]))
        # what this process keeps is bounded by its address space: no process budget here
        state = interpreter._new_state(None, HostBudget(limits.host_bytes, shared=None))
        result = interpreter._execute(plan, marshal.loads(code), state)
    except HostCallFailed as failed:
        return {"failed_call": failed.call_id, "stdout": failed.stdout}
    except TFInterpreterError as error:
        memory = isinstance(error.__cause__, MemoryError)
        return {
            "error": {
                "class": type(error).__name__, "kind": error.kind, "message": error.message,
                "line": error.line, "col": error.col, "source_line": error.source_line,
            },
            "stdout": error.stdout,
            # an answer still due would reach the next plan: a fresh process runs that
            "retire": memory or requests.unanswered
            or error.kind in ("TimeLimitExceeded", "Cancelled"),
        }
    return {"value": result.value, "stdout": result.stdout, "operations": result.operations,
            "duration_s": result.duration_s, "returned": result.returned}


def _set_cpu_limit(timeout_s: float) -> None:
    """CPU seconds left to this process: a backstop should the host not stop the plan."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = int(used + 2 * timeout_s + 5)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
