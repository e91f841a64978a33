"""Shared output helpers: exit codes, JSON that never fails, errors on stderr."""

from __future__ import annotations

import json
import sys
from enum import IntEnum
from typing import Any, NoReturn, TextIO

import typer

from dcbrain._text import encodable


class ExitCode(IntEnum):
    SUCCEEDED = 0
    FAILED = 1
    USAGE = 2
    ABORTED = 3


def to_jsonable(value: Any) -> Any:
    """``value`` with sets, tuples and unknown objects made JSON-friendly (and encodable)."""
    if isinstance(value, str):
        return encodable(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return [to_jsonable(item) for item in sorted(value, key=repr)]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    return repr(value)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def write_text(text: str, stream: TextIO | None = None) -> None:
    """Write ``text`` as it is, lone surrogates replaced (a plan may print any string)."""
    (stream or sys.stdout).write(encodable(text))


def fail_usage(message: str) -> NoReturn:
    """Report a usage or configuration error on stderr and exit with code 2."""
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(ExitCode.USAGE)
