"""Fixtures for brain tests: an in-memory OpenTelemetry span exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()
_installed = False


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans finished during the test (the SDK provider is installed once per process)."""
    global _installed
    if not _installed:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
        _installed = True
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
