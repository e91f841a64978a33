"""Recording a run: events in order, to subscribers, a JSONL file and OpenTelemetry spans.

:class:`RunRecorder` is the one place a run's events go through. It is thread-safe
(plans call chains and tools from worker threads), numbers events in order, keeps them
for the result and fans them out to subscribers, the optional JSONL trace and the
OpenTelemetry exporter. Without an OpenTelemetry tracer provider, no spans are made.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from dcbrain.brain.delivery import Fanout
from dcbrain.brain.text_deltas import TextDeltas
from dcbrain.chain import PlanCall
from dcbrain.chain._announce import PlanCallHooks
from dcbrain.events import (
    DEFAULT_CLIP,
    BrainRunStarted,
    CallAbandoned,
    CallFinished,
    CallRetry,
    CallStarted,
    CallStatus,
    ChainDelta,
    ErrorEvent,
    Event,
    EventData,
    EventLog,
    Final,
    LLMCallFinished,
    LLMCallStarted,
    PlanCallFinished,
    PlanCallStarted,
    PlanCreated,
    PlanRevised,
    PolicyDenied,
    StateChanged,
    Validation,
    clip,
    clip_arguments,
)
from dcbrain.telemetry import SPAN_ARGUMENTS_CHARS, span_arguments
from dcbrain.tfplan import CallRecord
from dcbrain.values.jsonsafe import dumps

Subscriber = Callable[[Event], None]

TRACER_NAME = "dcbrain.brain"

logger = logging.getLogger("dcbrain.events")


class RunRecorder:
    """Collects one run's events and delivers each, in order, to every sink.

    An event is numbered, kept, written to the JSONL trace and turned into spans under the
    recorder's lock; subscribers get it outside the lock, each in ``seq`` order on its own
    lane (see :mod:`dcbrain.brain.delivery`): a slow subscriber holds neither the thread that
    emits nor the other subscribers. :meth:`finish` emits the run's last event once the
    subscribers caught up, and returns once they have it too.
    """

    def __init__(
        self,
        run_id: str,
        subscribers: Iterable[Subscriber] = (),
        *,
        trace_path: str | Path | None = None,
        spans: bool = True,
        first_seq: int = 0,
    ) -> None:
        self.log = EventLog(run_id, first_seq)
        self._lock = threading.Lock()
        self._jsonl: JSONLTrace | None = JSONLTrace(trace_path) if trace_path else None
        self._spans = OTelSpans() if spans and tracing_configured() else None
        subscribers = list(subscribers)
        #: Nobody subscribed: no delivery at all.
        self._fanout: Fanout[Event] | None = Fanout(
            subscribers, on_failure=self._subscriber_failed) if subscribers else None

    def emit(self, payload: EventData) -> Event | None:
        """Record ``payload`` as the run's next event; dropped once the run is closed."""
        with self._lock:
            event = self.log.emit(payload)
            if event is None:
                return None
            if self._jsonl is not None:
                self._jsonl.write(event)
            if self._spans is not None:
                self._spans.handle(event)
            if self._fanout is not None:
                self._fanout.push(event)  # in seq order: still under the lock
        return event

    def _subscriber_failed(self, subscriber: Callable[..., Any], event: Event, failure: str,
                           error: BaseException | None) -> None:
        """A subscriber's failure is never hidden: it is logged with its traceback and
        told to the run as an ``error`` event (``source: "subscriber"``) — an app whose
        callback failed on ``approval_requested`` hears of it. The run goes on."""
        logger.error("run %s: %s", event.run_id, failure, exc_info=error,
                     extra={"run_id": event.run_id, "source": "subscriber"})
        payload = event.payload
        if not (isinstance(payload, ErrorEvent) and payload.source == "subscriber"):
            self.emit(ErrorEvent(source="subscriber", error=failure))

    async def delivered(self) -> None:
        """Wait until every subscriber got every event emitted so far."""
        if self._fanout is not None:
            await self._fanout.delivered()

    async def finish(self, last: EventData) -> Event | None:
        """End the run with ``last`` (its ``final``): once the subscribers caught up (their
        failures are told before it), emit it and close; return once they have it."""
        await self.delivered()
        event = self.emit(last)
        self.close()
        await self.delivered()
        return event

    def close(self) -> None:
        """The run ended: nothing more is recorded."""
        with self._lock:
            self.log.seal()
            if self._jsonl is not None:
                self._jsonl.close()
                self._jsonl = None
            if self._spans is not None:
                self._spans.close()

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return list(self.log.events)

    def as_dicts(self) -> list[dict[str, Any]]:
        with self._lock:
            return self.log.as_dicts()

    def call_context(self, call_id: str) -> Context | None:
        """The OpenTelemetry context with the open call ``call_id``'s span as the current
        one (``None`` without spans): where the call runs, its own spans nest under it."""
        with self._lock:
            return None if self._spans is None else self._spans.context_of(call_id)


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider is set: without one, spans would be
    no-ops, and a run makes none (checked per run, so one set later counts)."""
    provider = otel_trace.get_tracer_provider()
    return not isinstance(provider, otel_trace.ProxyTracerProvider | otel_trace.NoOpTracerProvider)


class JSONLTrace:
    """Appends every event as one JSON line to ``path`` (flushed per event)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def write(self, event: Event) -> None:
        if self._file is None:
            return
        self._file.write(dumps(event.to_dict()) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class OTelSpans:
    """Turns a run's events into OpenTelemetry spans.

    One ``dcbrain.brain.run`` span per run (a child of the current span when the run
    starts: a submission on another node, see :mod:`dcbrain.telemetry`); a span per
    ``planning``/``running`` phase; a span per chain, tool and LLM call, inside the call
    it happens in (a chain's LLM calls, a tool's chain calls) or else the current phase.
    A call the journal answers carries ``dcbrain.reused=true``. LLM call spans use the
    GenAI semantic conventions (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
    ``gen_ai.usage.output_tokens`` …).
    """

    def __init__(self) -> None:
        self._tracer = otel_trace.get_tracer(TRACER_NAME)
        self._run: Span | None = None
        self._phase: Span | None = None
        self._calls: dict[str, Span] = {}

    def handle(self, event: Event) -> None:
        at = int(event.ts * 1e9)
        match event.payload:
            case BrainRunStarted() as started:
                self._run = self._tracer.start_span(
                    "dcbrain.brain.run",
                    start_time=at,
                    attributes={
                        "dcbrain.run_id": str(event.run_id),
                        "dcbrain.conversation_id": started.conversation_id,
                        "dcbrain.max_iterations": started.max_iterations,
                        "dcbrain.max_tokens": started.max_tokens,
                    },
                )
            case StateChanged(dest=dest):
                self._end_phase(at)
                if dest in ("planning", "running") and self._run is not None:
                    self._phase = self._tracer.start_span(
                        f"dcbrain.brain.{dest}",
                        context=otel_trace.set_span_in_context(self._run),
                        start_time=at,
                    )
            case CallStarted() as call:
                self._start_call(call, at)
            case CallFinished() as call:
                self._finish_call(call, at)
            case Validation() | PlanCreated() | PlanRevised():
                target = self._phase or self._run
                if target is not None:
                    attributes = {
                        key: value
                        for key, value in event.data.items()
                        if isinstance(value, str | bool | int | float) and key != "plan"
                    }
                    target.add_event(str(event.type), attributes=attributes, timestamp=at)
            case Final() as final:
                self._finish_run(final, at)

    def close(self) -> None:
        for span in self._calls.values():
            span.end()
        self._calls.clear()
        self._end_phase(None)
        if self._run is not None:
            self._run.end()
            self._run = None

    def context_of(self, call_id: str) -> Context | None:
        span = self._calls.get(call_id)
        return None if span is None else otel_trace.set_span_in_context(span)

    def _start_call(self, call: CallStarted, at: int) -> None:
        current = otel_trace.get_current_span()
        # the thread runs one of this run's calls (its context attached there): nest in it
        enclosing = next((span for span in self._calls.values() if span is current), None)
        parent = enclosing or self._phase or self._run
        if parent is None:
            return
        context = otel_trace.set_span_in_context(parent)
        if isinstance(call, LLMCallStarted):
            span = self._tracer.start_span(
                f"chat {call.model}".strip(),
                context=context,
                kind=SpanKind.CLIENT,
                start_time=at,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": call.model,
                    "gen_ai.request.max_tokens": call.max_output_tokens,
                    "dcbrain.phase": call.phase,
                },
            )
        else:
            attributes: dict[str, str | int | bool] = {"dcbrain.call.kind": call.kind,
                                                       "dcbrain.call.name": call.name}
            if isinstance(call, PlanCallStarted):
                attributes["dcbrain.call.line"] = call.line
                attributes["dcbrain.reused"] = call.reused
                if span_arguments():  # a documented opt-in: arguments are a run's data
                    attributes["dcbrain.call.arguments"] = dumps(
                        call.args, compact=True)[:SPAN_ARGUMENTS_CHARS]
            span = self._tracer.start_span(f"{call.kind} {call.name}", context=context,
                                           start_time=at, attributes=attributes)
        self._calls[call.call_id] = span

    def _finish_call(self, call: CallFinished, at: int) -> None:
        span = self._calls.pop(call.call_id, None)
        if span is None:
            return
        if isinstance(call, LLMCallFinished):
            span.set_attribute("gen_ai.usage.input_tokens", call.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", call.completion_tokens)
            span.set_attribute("gen_ai.response.model", call.model)
            if call.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [call.finish_reason])
        if call.error:
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=at)

    def _end_phase(self, at: int | None) -> None:
        if self._phase is not None:
            self._phase.end(end_time=at)
            self._phase = None

    def _finish_run(self, final: Final, at: int) -> None:
        for span in self._calls.values():
            span.end(end_time=at)
        self._calls.clear()
        self._end_phase(at)
        if self._run is None:
            return
        self._run.set_attribute("dcbrain.status", final.status)
        self._run.set_attribute("dcbrain.reason", final.reason or "")
        usage = final.usage or {}
        self._run.set_attribute("gen_ai.usage.input_tokens", int(usage.get("prompt_tokens", 0)))
        self._run.set_attribute(
            "gen_ai.usage.output_tokens", int(usage.get("completion_tokens", 0))
        )
        if final.status != "succeeded":
            self._run.set_status(Status(StatusCode.ERROR, final.reason or ""))
        self._run.end(end_time=at)
        self._run = None


class PlanCallEvents(PlanCallHooks):
    """The :class:`~dcbrain.chain.PlanCallObserver` of a run: chain/tool calls as events.

    Calls still open when the run stops are closed by :meth:`close_open`; a late end of
    such a call (a tool thread that finished after the run) is not reported again.
    """

    def __init__(self, recorder: RunRecorder) -> None:
        self._recorder = recorder
        self._open: dict[int, tuple[PlanCallStarted, CallRecord]] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self.reused = 0

    def on_call_start(self, call: PlanCall) -> None:
        record = call.record
        with self._lock:
            call_id = f"call-{next(self._counter)}"
            self.reused += call.reused
        started = PlanCallStarted(
            call_id=call_id,
            kind=call.kind,
            name=record.name,
            args=clip_arguments(record.kwargs),
            reused=call.reused,
            line=record.line,
            col=record.col,
            branch=record.branch,
            path=call.path,
        )
        with self._lock:
            self._open[id(record)] = (started, record)
        self._recorder.emit(started)

    def on_call_end(self, call: PlanCall) -> None:
        record = call.record
        with self._lock:
            entry = self._open.pop(id(record), None)
        if entry is None:
            return
        started = entry[0]
        if record.error:
            self._recorder.emit(started.closed("error", record.error, record.duration_s))
            return
        self._recorder.emit(PlanCallFinished(
            **_site(started), status="ok", reused=started.reused,
            duration_s=record.duration_s, result=clip(record.result),
        ))

    def trace_context(self, call: PlanCall) -> Context | None:
        """The OpenTelemetry context to run the open call ``call`` in (``None``: as is)."""
        with self._lock:
            entry = self._open.get(id(call.record))
        return None if entry is None else self._recorder.call_context(entry[0].call_id)

    def text_deltas(self, call: PlanCall) -> TextDeltas | None:
        """Where the text a chain call's LLMs write goes while it runs: ``chain_delta``
        events of the open call ``call``."""
        with self._lock:
            entry = self._open.get(id(call.record))
        if entry is None or call.kind != "chain":
            return None
        started, record = entry

        def emit_while_open(payload: EventData) -> None:
            with self._lock:
                still_open = id(record) in self._open
            if still_open:  # nothing of a call follows its call_finished
                self._recorder.emit(payload)

        return TextDeltas(emit_while_open, lambda offset, text: ChainDelta(
            call_id=started.call_id, name=started.name, offset=offset, text=text))

    def on_call_abandoned(self, call: PlanCall) -> None:
        """The run stopped waiting for the open call ``call`` (its end follows)."""
        record = call.record
        with self._lock:
            entry = self._open.get(id(record))
        if entry is not None:
            started = entry[0]
            self._recorder.emit(CallAbandoned(**_site(started), running_s=record.duration_s))

    def on_call_retry(self, call: PlanCall, *, attempt: int, attempts: int, error: str,
                      delay_s: float) -> None:
        """Try ``attempt`` of an open call failed and is retried after ``delay_s``."""
        with self._lock:
            entry = self._open.get(id(call.record))
        if entry is None:
            return
        started = entry[0]
        self._recorder.emit(CallRetry(
            call_id=started.call_id,
            kind=started.kind,
            name=started.name,
            attempt=attempt,
            attempts=attempts,
            error=error if len(error) <= DEFAULT_CLIP else error[:DEFAULT_CLIP] + "…",
            delay_s=round(delay_s, 3),
            line=started.line,
            branch=started.branch,
            path=started.path,
        ))

    def on_policy_denied(self, event: PolicyDenied) -> None:
        """A policy refused a call before it ran."""
        self._recorder.emit(event)

    def close_open(self, status: CallStatus) -> None:
        """End every call still open with ``status`` (``aborted`` or ``error``)."""
        with self._lock:
            still_open = list(self._open.values())
            self._open.clear()
        for started, record in still_open:
            elapsed = max(time.time() - record.started_at, 0.0)
            self._recorder.emit(started.closed(status, f"the run stopped ({status})", elapsed))


def _site(started: PlanCallStarted) -> dict[str, Any]:
    """The fields that say which plan call an event of ``started``'s call is about."""
    return {"call_id": started.call_id, "kind": started.kind, "name": started.name,
            "line": started.line, "col": started.col, "branch": started.branch,
            "path": started.path}
