"""When a plan's call is announced to the caller's observer, and as what kind of call."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
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


class PlanCallObserver(Protocol):
    """Hears of every call of a :class:`~dcbrain.chain.TFChainInterpreter`'s plans."""

    def on_call_start(self, call: PlanCall) -> None: ...

    def on_call_end(self, call: PlanCall) -> None: ...


class CallAnnouncer:
    """Passes a plan's calls on to ``observer`` once the chain layer has entered them.

    The interpreter reports a call just before invoking it, in the same thread. Holding
    the report until the callable runs puts the new-input safe point before the
    announcement, and lets the call carry its kind: a chain built by
    ``__construct_chain`` is a chain, whatever the plan named it. A call refused at the
    safe point is never announced, so its end is not reported either.
    """

    def __init__(self, observer: PlanCallObserver) -> None:
        self._observer = observer
        self._reported = threading.local()
        self._announced: dict[int, PlanCall] = {}
        self._lock = threading.Lock()

    def on_call_start(self, record: CallRecord) -> None:
        self._reported.record = record

    def policy_denied(self, kind: PlanCallKind, name: str, error: TFPolicyDenied) -> None:
        """Tell an observer that listens (``on_policy_denied``) that a policy refused the
        call this thread is entering."""
        listener = getattr(self._observer, "on_policy_denied", None)
        if listener is None:
            return
        record = self.pending()
        listener(PolicyDenied(kind=kind, name=name, policy=error.policy, reason=error.message,
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
        """Tell an observer that listens (``on_call_retry``) that try ``attempt`` of the
        call ``record`` failed with ``error`` and is retried after ``delay_s``."""
        listener = getattr(self._observer, "on_call_retry", None)
        with self._lock:
            call = self._announced.get(id(record))
        if listener is not None and call is not None:
            listener(call, attempt=attempt, attempts=attempts,
                     error=f"{type(error).__name__}: {error}", delay_s=delay_s)

    @contextmanager
    def traced(self, record: CallRecord | None) -> Iterator[None]:
        """Run the body in the trace context of the announced call ``record``, when the
        observer has one (``trace_context``): spans started there are the call's children.
        Entered where the call runs — the plan's thread for a tool, a chain's task."""
        context_of = getattr(self._observer, "trace_context", None)
        with self._lock:
            call = self._announced.get(id(record)) if record is not None else None
        context = context_of(call) if context_of is not None and call is not None else None
        if context is None:
            yield
            return
        token = otel_context.attach(context)
        try:
            yield
        finally:
            otel_context.detach(token)

    @contextmanager
    def streamed(self, record: CallRecord | None) -> Iterator[None]:
        """Give the text the LLMs of the announced call ``record`` write in the body to the
        observer as it is written, when it listens (``text_deltas``: an object with
        ``open_reply()`` and ``close()``, or ``None``); closed when the body ends."""
        open_deltas = getattr(self._observer, "text_deltas", None)
        with self._lock:
            call = self._announced.get(id(record)) if record is not None else None
        deltas = open_deltas(call) if open_deltas is not None and call is not None else None
        if deltas is None:
            yield
            return
        try:
            with stream_llm_replies(deltas.open_reply):
                yield
        finally:
            deltas.close()

    def on_call_abandoned(self, record: CallRecord) -> None:
        report = getattr(self._observer, "on_call_abandoned", None)
        with self._lock:
            call = self._announced.get(id(record))
        if call is not None and report is not None:
            report(call)

    def on_call_end(self, record: CallRecord) -> None:
        if getattr(self._reported, "record", None) is record:
            self._reported.record = None
        with self._lock:
            call = self._announced.pop(id(record), None)
        if call is not None:
            self._observer.on_call_end(call)
