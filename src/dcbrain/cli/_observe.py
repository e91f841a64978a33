"""What ``serve``, ``worker`` and ``ask`` share to be observed: the log format."""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from dcbrain.cli._output import fail_usage
from dcbrain.logs import LOG_FORMATS, LogFormat, configure_logging

LogFormatOption = Annotated[
    str | None,
    typer.Option("--log-format", help="Log lines on stderr: text, or json (one object a "
                 "line: ts, level, message, run_id, conversation_id, worker).",
                 show_default=False),
]


#: Seconds a process started before its database waits for it (``--db-wait``).
DEFAULT_DB_WAIT_S = 120.0

DbWaitOption = Annotated[
    float,
    typer.Option("--db-wait", help="Seconds to wait at start for a PostgreSQL database that "
                 "is not reachable yet (a line is logged every 5 s meanwhile); then exit 2."),
]


def wait_for_database_or_exit(db: str | None, timeout_s: float, role: str) -> None:
    """Wait up to ``timeout_s`` for the PostgreSQL database ``db`` (nothing without one);
    exit 2 naming it when it stays unreachable."""
    import math

    if not (math.isfinite(timeout_s) and timeout_s >= 0):
        fail_usage(f"--db-wait must be a number of seconds >= 0, not {timeout_s}")
    try:
        from dcbrain.durable._pg import wait_for_database
        from dcbrain.durable._urls import is_postgres
        from dcbrain.exceptions import DatabaseUnavailable
    except ImportError:  # reported where durable runs are built
        return
    if db is None or not is_postgres(db):
        return
    try:
        wait_for_database(db, timeout_s, role=role)
    except DatabaseUnavailable as exc:
        fail_usage(str(exc))


#: The log format this process chose (``None``: logging left as it was).
_chosen: dict[str, LogFormat | None] = {"format": None}


def say(message: str, *, level: int = logging.INFO) -> None:
    """A line of the process's own (start-up, ready, draining, stopping): as it is on
    stderr, or as a JSON log line under ``--log-format json``."""
    if _chosen["format"] == "json":
        logging.getLogger("dcbrain.cli").log(level, message)
    else:
        sys.stderr.write(message + "\n")


def install_log_format(log_format: str | None, *, default_format: LogFormat | None = "text",
                       worker: str | None = None) -> None:
    """Install the log format (``default_format`` when none is given; ``None``: leave
    logging as it is). The span exporter of ``[telemetry]`` is the runtime's
    (:func:`dcbrain.config.runtime.build_runtime` with the process's role)."""
    chosen = log_format or default_format
    if chosen is not None:
        if chosen not in LOG_FORMATS:
            fail_usage(f"--log-format must be one of {', '.join(LOG_FORMATS)}, not {chosen!r}")
        configure_logging(chosen, worker=worker)
        _chosen["format"] = chosen
