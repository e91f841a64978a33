"""Traces of a process: the OTLP exporter, and a trace carried from one node to another.

:func:`configure_tracing` gives ``serve``, ``worker`` and ``ask`` an OpenTelemetry tracer
provider that exports spans over OTLP/HTTP when ``[telemetry] otlp_endpoint`` or the
standard ``OTEL_EXPORTER_OTLP_*`` variables name a receiver (nothing is set up, and runs
make no spans, otherwise). :func:`current_traceparent` and :func:`continued_trace` carry a
trace across processes as a W3C ``traceparent``: an API node stores it with a run it
queues, and the worker's spans of that run continue it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

#: The variables of the OpenTelemetry specification that name an OTLP receiver.
OTLP_ENDPOINT_VARIABLES: tuple[str, ...] = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                            "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_SERVICE_NAME = "dcbrain"

_propagator = TraceContextTextMapPropagator()
#: Whether a call's span carries its arguments (``[telemetry] span_arguments``): off by
#: default, since arguments are a run's data (addresses, amounts, a user's words) and an
#: OTLP backend is usually read by more people than the runs are.
_span_arguments = False
#: Characters of a call's arguments a span keeps (as JSON).
SPAN_ARGUMENTS_CHARS = 2000


def set_span_arguments(on: bool) -> None:
    """Put calls' arguments into their spans (``dcbrain.call.arguments``), or stop."""
    global _span_arguments
    _span_arguments = on


def span_arguments() -> bool:
    """Whether calls' spans carry their arguments (see :func:`set_span_arguments`)."""
    return _span_arguments


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span (``None`` without a recording one)."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


@contextmanager
def continued_trace(traceparent: str | None) -> Iterator[None]:
    """Spans started inside are children of the remote span ``traceparent`` names."""
    if not traceparent:
        yield
        return
    token = otel_context.attach(_propagator.extract({"traceparent": traceparent}))
    try:
        yield
    finally:
        otel_context.detach(token)


def otlp_traces_endpoint(configured: str | None) -> str | None:
    """Where spans go: ``configured`` (``[telemetry] otlp_endpoint``, a base URL like
    ``OTEL_EXPORTER_OTLP_ENDPOINT``), else the standard variables; ``None``: nowhere."""
    if configured:
        return configured.rstrip("/") + "/v1/traces"
    if os.environ.get(OTLP_ENDPOINT_VARIABLES[0]):
        return os.environ[OTLP_ENDPOINT_VARIABLES[0]]
    base = os.environ.get(OTLP_ENDPOINT_VARIABLES[1])
    return base.rstrip("/") + "/v1/traces" if base else None


def configure_tracing(configured_endpoint: str | None, *, role: str,
                      arguments: bool = False) -> Callable[[], None] | None:
    """Export this process's spans over OTLP/HTTP when an endpoint is known; ``arguments``
    puts each call's arguments into its span (:func:`set_span_arguments`).

    ``role`` (``serve``, ``worker``, ``ask``) becomes the resource's ``dcbrain.role``;
    ``service.name`` is ``OTEL_SERVICE_NAME`` or ``dcbrain``. Returns what flushes and
    stops the exporter at exit (``None``: tracing stays off).
    """
    set_span_arguments(arguments)
    endpoint = otlp_traces_endpoint(configured_endpoint)
    if endpoint is None:
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({
        "service.name": os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME,
        "dcbrain.role": role,
    })
    provider = TracerProvider(resource=resource)
    # headers, timeout, compression and certificates come from OTEL_EXPORTER_OTLP_*
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    otel_trace.set_tracer_provider(provider)
    return provider.shutdown


def submission_traceparent(run_id: str, conversation_id: str) -> str | None:
    """Record a run's submission as a span (a child of the current one) and return the
    ``traceparent`` its execution continues; ``None`` while tracing is off."""
    tracer = otel_trace.get_tracer("dcbrain.runs")
    with tracer.start_as_current_span(
        "dcbrain.run.submit", kind=otel_trace.SpanKind.PRODUCER,
        attributes={"dcbrain.run_id": run_id, "dcbrain.conversation_id": conversation_id},
    ):
        return current_traceparent()
