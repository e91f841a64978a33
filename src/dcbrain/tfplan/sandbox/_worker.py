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
from collections.abc import Callable
from types import CodeType
from typing import Any

from dcbrain.tfplan.errors import HostCallFailed, TFInterpreterError
from dcbrain.tfplan.host import Dispatcher, background_loop
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.interpreter import Interpreter
from dcbrain.tfplan.labels.provenance import Tracking, call_sources
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.parser import Plan
from dcbrain.tfplan.result import CallRecord, ConsoleResult
from dcbrain.tfplan.sandbox._wire import WORKER_RECORD_FIELDS, Channel, ChannelClosed
from dcbrain.tfplan.state import Cancelled, Expired, RunState

#: Scope of the calling thread: 0 at top level, else the host's id of its ``parallel`` branch.
_scope: contextvars.ContextVar[int] = contextvars.ContextVar("tf_sandbox_scope", default=0)


class _Requests:
    """Requests to the host; whichever waiting thread reads hands the others their answers."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
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
                    _, answer_id, status, value = self.channel.recv()
                finally:
                    self._lock.acquire()
                    self._reading = False
                self._answers[answer_id] = (status, value)
                self._answered.notify_all()
            self._asked.discard(request_id)
            return self._answers.pop(request_id)


class _Stash(threading.local):
    record: CallRecord | None = None


class _RecordStash:
    """The worker's observer: hands each call's record to the stand-in making the call."""

    def __init__(self) -> None:
        self.local = _Stash()

    def on_call_start(self, record: CallRecord) -> None:
        self.local.record = record

    def on_call_end(self, record: CallRecord) -> None:
        self.local.record = None


class _Remote:
    """Stand-in for a chain or tool of the host (``target``: its name or a handle)."""

    __slots__ = ("requests", "stash", "target")

    def __init__(self, target: str | int, requests: _Requests, stash: _RecordStash) -> None:
        self.target = target
        self.requests = requests
        self.stash = stash

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        record = self.stash.local.record
        fields: dict[str, Any] = {} if record is None else {
            key: getattr(record, key) for key in WORKER_RECORD_FIELDS
        }
        sources = call_sources.get()
        if sources is not None:
            fields["sources"] = sources.to_wire()
        status, value = self.requests.ask("call", self.target, fields, list(args), kwargs,
                                          _scope.get())
        if status == "ok":
            return value
        if status == "handle":
            return _Remote(value, self.requests, self.stash)
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
    """The worker's dispatch point: a stand-in's answer is not copied again.

    The host made that answer from its own boundary copy of the call's result (checked,
    sized against ``max_size`` and paid for from the run's host budget there), and this
    process unpickled it into fresh values: a second copy here would check nothing new.
    """

    def invoke(self, record: CallRecord, func: Callable[..., Any], *,
               plain_result: bool = True, sources: Any = None) -> Any:
        if type(func) is _Remote:
            plain_result = False
        return super().invoke(record, func, plain_result=plain_result, sources=sources)


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
    background_loop()


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
         trusted_fields: dict[str, list[str]], reads: dict[str, list[str]]) -> dict[str, Any]:
    requests = _Requests(channel)
    stash = _RecordStash()
    callables: dict[str, Callable[..., Any]] = {
        name: _Remote(name, requests, stash) for name in names
    }
    construct_chain = _Remote("__construct_chain", requests, stash) if construct else None
    interpreter = _WorkerInterpreter(
        callables, limits=limits, isolation="inprocess", construct_chain=construct_chain,
        observer=stash, parallel_hooks=_RemoteHooks(requests), passthrough=(HostCallFailed,),
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
