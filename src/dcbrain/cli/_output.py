"""Shared output helpers: exit codes, JSON that never fails, text safe for a terminal,
errors on stderr."""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import Any, NoReturn, TextIO

import typer

from dcbrain.values.jsonsafe import dumps
from dcbrain.values.text import encodable, terminal_text


class ExitCode(IntEnum):
    SUCCEEDED = 0
    FAILED = 1
    USAGE = 2
    ABORTED = 3


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON that is always valid (:mod:`dcbrain.values.jsonsafe`)."""
    sys.stdout.write(dumps(value, indent=2) + "\n")
    sys.stdout.flush()


def write_text(text: str, stream: TextIO | None = None) -> None:
    """Write ``text`` as it is, lone surrogates replaced (a plan may print any string); on a
    terminal, control characters are shown as escapes (see :func:`terminal_text`)."""
    stream = stream or sys.stdout
    stream.write(terminal_text(text) if _is_terminal(stream) else encodable(text))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def fail_usage(message: str) -> NoReturn:
    """Report a usage or configuration error on stderr and exit with code 2."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(ExitCode.USAGE)
