"""Where a registered callable comes from, as errors about it say it.

Two callables of one name are refused wherever they are registered, and the refusal names
both definitions, so the user can find and rename one: an MCP server's tool by its
server (a tool's ``origin``), a Python function by its file and line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def describe_callable(name: str, func: Any) -> str:
    """``MCP server 'notes' tool 'get_note'``, or ``tool 'get_note' (function get_note in
    tools.py:3)``; a tool object is described by the function it wraps."""
    origin = getattr(func, "origin", "")
    if origin:
        return f"{origin} tool {name!r}"
    target = getattr(func, "func", func)
    function = getattr(target, "__qualname__", type(target).__name__)
    code = getattr(target, "__code__", None)
    where = f" in {_shown_path(code.co_filename)}:{code.co_firstlineno}" if code else ""
    return f"tool {name!r} (function {function}{where})"


def _shown_path(filename: str) -> str:
    """``filename`` relative to the working directory when it is under it."""
    path = Path(filename)
    try:
        return str(path.resolve().relative_to(Path(os.getcwd()).resolve()))
    except (ValueError, OSError):
        return filename
