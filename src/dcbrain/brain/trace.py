"""Recording a run: events in order, to subscribers, a JSONL file and OpenTelemetry spans.

:class:`RunRecorder` is the one place a run's events go through. It is thread-safe
(plans call chains and tools from worker threads), numbers events in order, keeps them
for the result and fans them out to subscribers, the optional JSONL trace and the
OpenTelemetry exporter. Without an OpenTelemetry tracer provider, no spans are made.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from dcbrain._jsonsafe import dumps
from dcbrain.events import (
    DEFAULT_CLIP,
    CallFinished,
    CallRetry,
    CallStarted,
    Event,
    EventData,
    EventLog,
    EventType,
    clip,
    clip_arguments,
)
from dcbrain.tfplan import CallRecord

Subscriber = Callable[[Event], None]

TRACER_NAME = "dcbrain.brain"


class RunRecorder:
    """Collects one run's events and delivers each, in order, to every sink."""

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
        for subscriber in subscribers:
            self.log.subscribe(subscriber)

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

    One ``dcbrain.brain.run`` span per run; a span per ``planning``/``running`` phase;
    a span per chain, tool and LLM call inside the current phase. LLM call spans use the
    GenAI semantic conventions (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
    ``gen_ai.usage.output_tokens`` …).
    """

    def __init__(self) -> None:
        self._tracer = otel_trace.get_tracer(TRACER_NAME)
        self._run: Span | None = None
        self._phase: Span | None = None
        self._calls: dict[str, Span] = {}

    def handle(self, event: Event) -> None:
        data = event.data
        at = int(event.ts * 1e9)
        kind = event.type
        if kind == EventType.RUN_STARTED:
            self._run = self._tracer.start_span(
                "dcbrain.brain.run",
                start_time=at,
                attributes={
                    "dcbrain.run_id": str(event.run_id),
                    "dcbrain.conversation_id": str(data.get("conversation_id", "")),
                    "dcbrain.max_iterations": int(data.get("max_iterations", 0)),
                    "dcbrain.max_tokens": int(data.get("max_tokens", 0)),
                },
            )
        elif kind == EventType.STATE_CHANGED:
            self._end_phase(at)
            dest = str(data.get("dest", ""))
            if dest in ("planning", "running") and self._run is not None:
                self._phase = self._tracer.start_span(
                    f"dcbrain.brain.{dest}",
                    context=otel_trace.set_span_in_context(self._run),
                    start_time=at,
                )
        elif kind == EventType.CALL_STARTED:
            self._start_call(data, at)
        elif kind == EventType.CALL_FINISHED:
            self._finish_call(data, at)
        elif kind in (EventType.VALIDATION, EventType.PLAN_CREATED, EventType.PLAN_REVISED):
            target = self._phase or self._run
            if target is not None:
                attributes = {
                    key: value
                    for key, value in data.items()
                    if isinstance(value, str | bool | int | float) and key != "plan"
                }
                target.add_event(str(kind), attributes=attributes, timestamp=at)
        elif kind == EventType.FINAL:
            self._finish_run(data, at)

    def close(self) -> None:
        for span in self._calls.values():
            span.end()
        self._calls.clear()
        self._end_phase(None)
        if self._run is not None:
            self._run.end()
            self._run = None

    def _start_call(self, data: dict[str, Any], at: int) -> None:
        parent = self._phase or self._run
        if parent is None:
            return
        context = otel_trace.set_span_in_context(parent)
        if data.get("kind") == "llm":
            model = str(data.get("model", ""))
            span = self._tracer.start_span(
                f"chat {model}".strip(),
                context=context,
                kind=SpanKind.CLIENT,
                start_time=at,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": model,
                    "gen_ai.request.max_tokens": int(data.get("max_output_tokens", 0)),
                    "dcbrain.phase": str(data.get("phase", "")),
                },
            )
        else:
            span = self._tracer.start_span(
                f"{data.get('kind', 'call')} {data.get('name', '')}",
                context=context,
                start_time=at,
                attributes={
                    "dcbrain.call.kind": str(data.get("kind", "")),
                    "dcbrain.call.name": str(data.get("name", "")),
                    "dcbrain.call.line": int(data.get("line", 0) or 0),
                },
            )
        self._calls[str(data.get("call_id"))] = span

    def _finish_call(self, data: dict[str, Any], at: int) -> None:
        span = self._calls.pop(str(data.get("call_id")), None)
        if span is None:
            return
        if data.get("kind") == "llm":
            span.set_attribute("gen_ai.usage.input_tokens", int(data.get("prompt_tokens", 0)))
            span.set_attribute("gen_ai.usage.output_tokens", int(data.get("completion_tokens", 0)))
            span.set_attribute("gen_ai.response.model", str(data.get("model", "")))
            if data.get("finish_reason"):
                span.set_attribute("gen_ai.response.finish_reasons", [str(data["finish_reason"])])
        error = data.get("error")
        if error:
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end(end_time=at)

    def _end_phase(self, at: int | None) -> None:
        if self._phase is not None:
            self._phase.end(end_time=at)
            self._phase = None

    def _finish_run(self, data: dict[str, Any], at: int) -> None:
        for span in self._calls.values():
            span.end(end_time=at)
        self._calls.clear()
        self._end_phase(at)
        if self._run is None:
            return
        status = str(data.get("status", ""))
        self._run.set_attribute("dcbrain.status", status)
        self._run.set_attribute("dcbrain.reason", str(data.get("reason", "")))
        usage = data.get("usage") or {}
        self._run.set_attribute("gen_ai.usage.input_tokens", int(usage.get("prompt_tokens", 0)))
        self._run.set_attribute(
            "gen_ai.usage.output_tokens", int(usage.get("completion_tokens", 0))
        )
        if status != "succeeded":
            self._run.set_status(Status(StatusCode.ERROR, str(data.get("reason", ""))))
        self._run.end(end_time=at)
        self._run = None


class PlanCallEvents:
    """The tf_plan :class:`~dcbrain.tfplan.CallObserver` of a run: chain/tool calls as events.

    Calls still open when the run stops are closed by :meth:`close_open`; a late end of
    such a call (a tool thread that finished after the run) is not reported again.
    """

    def __init__(self, recorder: RunRecorder, chain_names: Iterable[str]) -> None:
        self._recorder = recorder
        self._chains = frozenset(chain_names)
        self._open: dict[int, tuple[str, CallRecord]] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self.reused = 0

    def on_call_start(self, record: CallRecord) -> None:
        reused = bool(record.extra.get("reused"))
        with self._lock:
            call_id = f"call-{next(self._counter)}"
            self._open[id(record)] = (call_id, record)
            self.reused += reused
        self._recorder.emit(CallStarted(
            call_id=call_id,
            kind=self._kind(record),
            name=record.name,
            args=clip_arguments(record.kwargs),
            reused=reused,
            line=record.line,
            col=record.col,
            branch=record.branch,
            path=str(record.extra.get("path", "")),
        ))

    def on_call_end(self, record: CallRecord) -> None:
        with self._lock:
            entry = self._open.pop(id(record), None)
        if entry is not None:
            self._finish(entry[0], record, "error" if record.error else "ok")

    def on_call_retry(self, record: CallRecord, *, attempt: int, attempts: int, error: str,
                      delay_s: float) -> None:
        """Try ``attempt`` of an open call failed and is retried after ``delay_s``."""
        with self._lock:
            entry = self._open.get(id(record))
        if entry is None:
            return
        self._recorder.emit(CallRetry(
            call_id=entry[0],
            kind=self._kind(record),
            name=record.name,
            attempt=attempt,
            attempts=attempts,
            error=error if len(error) <= DEFAULT_CLIP else error[:DEFAULT_CLIP] + "…",
            delay_s=round(delay_s, 3),
            line=record.line,
            branch=record.branch,
            path=str(record.extra.get("path", "")),
        ))

    def close_open(self, status: str) -> None:
        """End every call still open with ``status`` (``aborted`` or ``error``)."""
        with self._lock:
            still_open = list(self._open.values())
            self._open.clear()
        for call_id, record in still_open:
            self._finish(call_id, record, status, error=f"the run stopped ({status})")

    def _finish(
        self, call_id: str, record: CallRecord, status: str, error: str | None = None
    ) -> None:
        failed = status != "ok"
        self._recorder.emit(CallFinished(
            call_id=call_id,
            kind=self._kind(record),
            name=record.name,
            status=status,  # type: ignore[arg-type]
            reused=bool(record.extra.get("reused")),
            line=record.line,
            branch=record.branch,
            path=str(record.extra.get("path", "")),
            duration_s=record.duration_s,
            error=record.error or error if failed else None,
            result=None if failed else clip(record.result),
        ))

    def _kind(self, record: CallRecord) -> str:
        name = record.name
        given = record.extra.get("kind")
        if isinstance(given, str) and given:
            return given
        if name == "__construct_chain":
            return "construct_chain"
        return "chain" if name in self._chains else "tool"
