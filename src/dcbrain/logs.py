"""A process's log lines: plain text or JSON lines, each with the run it is about.

:func:`run_scope` names the run a stretch of code works for (a context variable, so it
follows the run into its tasks and the threads started with its context); every line
logged meanwhile carries ``run_id`` and ``conversation_id``. :func:`configure_logging`
installs the format ``serve``, ``worker`` and ``ask`` write to stderr (``--log-format``);
``serve`` hands uvicorn's loggers to it too, and DBOS's lines go through it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

#: The run the current code works for: ``run_id`` and ``conversation_id``.
current_run: ContextVar[Mapping[str, str] | None] = ContextVar("dcbrain_current_run",
                                                               default=None)

#: Libraries whose INFO lines describe each state change or request: kept to warnings.
CHATTY_LIBRARIES: tuple[str, ...] = ("transitions", "httpx", "httpcore", "openai", "mcp")

#: Libraries that give their logger a handler of their own unless it has one (DBOS): given
#: one that drops nothing and writes nothing, their lines go to the process's handler.
OWN_HANDLER_LIBRARIES: tuple[str, ...] = ("dbos",)

#: Fields a line may carry through ``logging``'s ``extra=``; a JSON line keeps them.
RUN_FIELDS: tuple[str, ...] = ("run_id", "conversation_id", "status", "reason",
                               "duration_s", "error", "source")


@contextmanager
def run_scope(run_id: str, conversation_id: str) -> Iterator[None]:
    """Lines logged inside are about run ``run_id`` of ``conversation_id``."""
    token = current_run.set({"run_id": run_id, "conversation_id": conversation_id})
    try:
        yield
    finally:
        current_run.reset(token)


def run_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The run fields of ``record``: its ``extra=`` first, then the current run's."""
    fields: dict[str, Any] = dict(current_run.get() or {})
    for name in RUN_FIELDS:
        value = record.__dict__.get(name)
        if value is not None:
            fields[name] = value
    return fields


class JSONLineFormatter(logging.Formatter):
    """One JSON object per line: ``ts`` (ISO 8601, UTC), ``level``, ``logger``,
    ``message``, the process's fields (``worker``), the run's fields and ``exception``."""

    def __init__(self, process_fields: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.process_fields = dict(process_fields or {})

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _iso_time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **self.process_fields,
            **run_fields(record),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time level logger: message [run=… conversation=…]``."""

    def __init__(self, process_fields: Mapping[str, str] | None = None) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.process_fields = dict(process_fields or {})

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = {**self.process_fields, **run_fields(record)}
        if not fields:
            return text
        return text + " [" + " ".join(f"{key}={value}" for key, value in fields.items()) + "]"


def configure_logging(log_format: LogFormat, *, worker: str | None = None,
                      level: int = logging.INFO) -> logging.Handler:
    """Send this process's log lines to stderr in
    ``log_format``; ``worker`` names the process in every line. Returns the handler."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"--log-format must be one of {', '.join(LOG_FORMATS)}, "
                         f"not {log_format!r}")
    process_fields = {"worker": worker} if worker else {}
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONLineFormatter(process_fields) if log_format == "json"
                         else TextFormatter(process_fields))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "dcbrain_handler", False)]:
        root.removeHandler(old)
    handler.dcbrain_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    logging.captureWarnings(log_format == "json")  # Python's warnings as log lines too
    for name in OWN_HANDLER_LIBRARIES:
        library = logging.getLogger(name)
        for old in list(library.handlers):  # one installed before (its own console's)
            library.removeHandler(old)
        library.addHandler(logging.NullHandler())
        library.propagate = True
    return handler


def _iso_time(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"
