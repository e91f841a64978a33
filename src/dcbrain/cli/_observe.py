"""What ``serve``, ``worker`` and ``ask`` share to be observed: log format and traces."""

from __future__ import annotations

import atexit
from typing import TYPE_CHECKING, Annotated

import typer

from dcbrain.cli._output import fail_usage
from dcbrain.logs import LOG_FORMATS, LogFormat, configure_logging

if TYPE_CHECKING:
    from dcbrain.config import Config

LogFormatOption = Annotated[
    str | None,
    typer.Option("--log-format", help="Log lines on stderr: text, or json (one object a "
                 "line: ts, level, message, run_id, conversation_id, worker).",
                 show_default=False),
]


def observe_process(config: Config, role: str, log_format: str | None, *,
                    default_format: LogFormat | None = "text", worker: str | None = None) -> None:
    """Install the log format (``default_format`` when none is given; ``None``: leave
    logging as it is) and the OTLP span exporter of ``config``'s ``[telemetry]``."""
    chosen = log_format or default_format
    if chosen is not None:
        if chosen not in LOG_FORMATS:
            fail_usage(f"--log-format must be one of {', '.join(LOG_FORMATS)}, not {chosen!r}")
        configure_logging(chosen, worker=worker)
    from dcbrain.telemetry import configure_tracing

    endpoint = config.telemetry.otlp_endpoint
    shutdown = configure_tracing(None if endpoint is None else str(endpoint), role=role,
                                 arguments=config.telemetry.span_arguments)
    if shutdown is not None:
        atexit.register(shutdown)  # the last spans are sent before the process exits
