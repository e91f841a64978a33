"""When a plan's call is announced to the caller's observer, and as what kind of call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import context as otel_context

from dcbrain.events import PlanCallKind, PolicyDenied
from dcbrain.llm.observe import stream_llm_replies
from dcbrain.tfplan import CallRecord
from dcbrain.tfplan.errors import TFPolicyDenied


@dataclass(frozen=True)
class PlanCall:
    """A plan's chain, tool or ``__construct_chain`` call, as the chain layer announces it.

    ``record`` is the interpreter's record of the call (its result and error once it
    ended); ``reused``: the run journal answers it with a recorded result; ``path``: its
    ``parallel`` branch path (``""`` at the top level).
    """

    record: CallRecord
    kind: PlanCallKind
    reused: bool = False
    path: str = ""


class ReplyDeltas(Protocol):
    """Where a chain call's streamed LLM text goes (see :meth:`PlanCallObserver.text_deltas`)."""

    def open_reply(self) -> Callable[[str], None]: ...

    def close(self) -> None: ...


class PlanCallObserver(Protocol):
    """Hears of every call of a :class:`~dcbrain.chain.TFChainInterpreter`'s plans.

    Every hook is declared here; :class:`PlanCallHooks` is a base whose hooks do nothing,
    to override only those wanted. An object with only some of them is completed with
    the base's (see :func:`plan_call_hooks`).
    """

    def on_call_start(self, call: PlanCall) -> None: ...

    def on_call_end(self, call: PlanCall) -> None: ...


class PlanCallHooks:
    """Every hook of a plan call's observer, doing nothing: the base to override."""

    def on_call_start(self, call: PlanCall) -> None:
        """The call ``call`` starts (after its safe point, approval and policies)."""

    def on_call_end(self, call: PlanCall) -> None:
        """The call ended (``call.record`` holds its result or error)."""

    def on_call_abandoned(self, call: PlanCall) -> None:
        """The plan stopped waiting for the open call (its end follows)."""

    def on_call_retry(self, call: PlanCall, *, attempt: int, attempts: int, error: str,
                      delay_s: float) -> None:
        """Try ``attempt`` of ``attempts`` failed with ``error``; next try after ``delay_s``."""

    def on_policy_denied(self, event: PolicyDenied) -> None:
        """A policy refused a call before it ran."""

    def trace_context(self, call: PlanCall) -> otel_context.Context | None:
        """The OpenTelemetry context to run the open call in (``None``: as is)."""
        return None

    def text_deltas(self, call: PlanCall) -> ReplyDeltas | None:
        """Where the text of the open chain call's LLMs goes as written (``None``: nowhere)."""
        return None


_HOOKS = ("on_call_start", "on_call_end", "on_call_abandoned", "on_call_retry",
          "on_policy_denied", "trace_context", "text_deltas")


def plan_call_hooks(observer: PlanCallObserver | PlanCallHooks) -> PlanCallHooks:
    """``observer`` with every hook: itself when it is a :class:`PlanCallHooks`, else a
    :class:`PlanCallHooks` calling the hooks it has (looked up once, here)."""
    if isinstance(observer, PlanCallHooks):
        return observer
    hooks = PlanCallHooks()
    for name in _HOOKS:
        hook = getattr(observer, name, None)
        if hook is not None:
            setattr(hooks, name, hook)
    return hooks


class CallAnnouncer:
    """Passes a plan's calls on to ``observer`` once the chain layer has entered them.

    The interpreter reports a call just before invoking it, in the same thread. Holding
    the report until the callable runs puts the new-input safe point before the
    announcement, and lets the call carry its kind: a chain built by
    ``__construct_chain`` is a chain, whatever the plan named it. A call refused at the
    safe point is never announced, so its end is not reported either.
    """

    def __init__(self, observer: PlanCallObserver | PlanCallHooks) -> None:
        self._observer = plan_call_hooks(observer)
        self._reported = threading.local()
        self._announced: dict[int, PlanCall] = {}
        self._lock = threading.Lock()

    def on_call_start(self, record: CallRecord) -> None:
        self._reported.record = record

    def policy_denied(self, kind: PlanCallKind, name: str, error: TFPolicyDenied) -> None:
        """Tell the observer (``on_policy_denied``) that a policy refused the call this
        thread is entering."""
        record = self.pending()
        self._observer.on_policy_denied(PolicyDenied(
            kind=kind, name=name, policy=error.policy, reason=error.message,
            argument=error.argument, sources=list(error.sources),
            line=record.line if record is not None else None))

    def pending(self) -> CallRecord | None:
        """The record of the call this thread is entering, not announced yet."""
        return getattr(self._reported, "record", None)

    def announce(
        self, kind: PlanCallKind, *, reused: bool = False, path: str = ""
    ) -> CallRecord | None:
        """Announce the call this thread is entering as a call of ``kind``; its record."""
        record: CallRecord | None = getattr(self._reported, "record", None)
        if record is None:
            return None
        self._reported.record = None
        call = PlanCall(record, kind, reused, path)
        with self._lock:
            self._announced[id(record)] = call
        self._observer.on_call_start(call)
        return record

    def retried(self, record: CallRecord, attempt: int, attempts: int, error: BaseException,
                delay_s: float) -> None:
        """Tell the observer (``on_call_retry``) that try ``attempt`` of the call
        ``record`` failed with ``error`` and is retried after ``delay_s``."""
        call = self._call_of(record)
        if call is not None:
            self._observer.on_call_retry(call, attempt=attempt, attempts=attempts,
                     error=f"{type(error).__name__}: {error}", delay_s=delay_s)

    def _call_of(self, record: CallRecord | None) -> PlanCall | None:
        """The announced call of ``record`` (``None``: it was not announced)."""
        if record is None:
            return None
        with self._lock:
            return self._announced.get(id(record))

    def traced(self, record: CallRecord | None) -> AbstractContextManager[None]:
        """Run the body in the trace context of the announced call ``record``, when the
        observer has one (``trace_context``): spans started there are the call's children.
        Entered where the call runs — the plan's thread for a tool, a chain's task; the
        context is looked up when this is called, right before the body."""
        call = self._call_of(record)
        context = self._observer.trace_context(call) if call is not None else None
        if context is None:
            return nullcontext()
        return _attached(context)

    @contextmanager
    def streamed(self, record: CallRecord | None) -> Iterator[None]:
        """Give the text the LLMs of the announced call ``record`` write in the body to the
        observer as it is written, when it listens (``text_deltas``: an object with
        ``open_reply()`` and ``close()``, or ``None``); closed when the body ends."""
        call = self._call_of(record)
        deltas = self._observer.text_deltas(call) if call is not None else None
        if deltas is None:
            yield
            return
        try:
            with stream_llm_replies(deltas.open_reply):
                yield
        finally:
            deltas.close()

    def on_call_abandoned(self, record: CallRecord) -> None:
        call = self._call_of(record)
        if call is not None:
            self._observer.on_call_abandoned(call)

    def on_call_end(self, record: CallRecord) -> None:
        if getattr(self._reported, "record", None) is record:
            self._reported.record = None
        with self._lock:
            call = self._announced.pop(id(record), None)
        if call is not None:
            self._observer.on_call_end(call)


@contextmanager
def _attached(context: otel_context.Context) -> Iterator[None]:
    """The body run with ``context`` as the current OpenTelemetry context."""
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)
