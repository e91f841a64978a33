"""JSON that leaves the process: always valid JSON text, always encodable as UTF-8.

Plans, tools, LLMs and MCP servers may produce any Python value. Every surface that
writes JSON for others — ``--json`` output, the server's responses and event stream, MCP
replies, traces, stores, prompts — writes it with :func:`dumps`, which first makes the
value plain JSON data with :func:`plain`:

- every string (dict keys too) has its lone surrogates replaced by U+FFFD;
- ``nan``, ``inf`` and ``-inf`` become the strings ``"nan"``, ``"inf"`` and ``"-inf"``
  (their ``repr``: JSON has no such numbers);
- an int with more digits than Python writes in decimal (``sys.get_int_max_str_digits()``,
  4300 by default) becomes its hexadecimal string, ``"0x…"`` (``int(text, 16)`` reads it
  back); decimal would take time quadratic in its length;
- a ``Decimal``, ``date``, ``datetime``, ``time`` or ``timedelta`` (plan values) becomes
  the string pydantic writes for it (``"129.99"``, ISO 8601: ``"2026-01-02T03:04:05"``,
  ``"P1DT2H"``);
- tuples become lists, sets sorted lists, pydantic models and objects with ``to_dict()``
  their data, anything else (a ``Path``, a non-string dict key) its ``str()``; data
  nested deeper than 100 levels ends in ``"…"``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from datetime import date, time, timedelta
from decimal import Decimal
from typing import Any

from pydantic_core import to_jsonable_python

from dcbrain.values.text import encodable

#: Nesting depth past which :func:`plain` writes ``"…"`` instead of the data.
MAX_DEPTH = 100
#: Ints of at most this many bits have under 640 digits, the lowest limit Python accepts.
_SMALL_INT_BITS = 2100


def plain(value: Any, _depth: int = 0) -> Any:
    """``value`` as plain JSON data that :func:`json.dumps` always writes; never raises."""
    # exact types first: events and results are mostly these, and this runs per event
    kind = type(value)
    if kind is str:
        return value if value.isascii() else encodable(value)
    if kind is dict and _depth <= MAX_DEPTH:
        return {key if type(key) is str and key.isascii() else _key(key): plain(item, _depth + 1)
                for key, item in value.items()}
    if kind is list and _depth <= MAX_DEPTH:
        return [plain(item, _depth + 1) for item in value]
    if kind is int:
        return value if value.bit_length() <= _SMALL_INT_BITS or decimal_ok(value) \
            else hex(value)
    if value is None or kind is bool:
        return value
    return _plain_other(value, _depth)


def _plain_other(value: Any, _depth: int) -> Any:
    """:func:`plain` for subclasses, floats, containers other than dict and list, objects."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, int):
        return value if decimal_ok(value) else hex(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, PLAN_SCALARS):
        return edge_text(value)
    if _depth > MAX_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        return {_key(key): plain(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, _depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        return [plain(item, _depth + 1) for item in sorted(value, key=safe_repr)]
    if not isinstance(value, type):
        model_dump = getattr(value, "model_dump", None)
        if callable(model_dump):  # a pydantic model
            return plain(_attempt(lambda: model_dump(mode="json"), value), _depth + 1)
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return plain(_attempt(to_dict, value), _depth + 1)
    return _text(value)


def edge_text(value: Decimal | date | time | timedelta) -> str:
    """The JSON text of a plan value that JSON has no type for: what pydantic writes."""
    return str(to_jsonable_python(value))


def edge_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with every plan value JSON has no type for (:func:`edge_text`) made
    its text, for a callee that takes JSON (an MCP server); other values unchanged."""
    def convert(value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is dict and depth <= MAX_DEPTH:
            return {key: convert(item, depth + 1) for key, item in value.items()}
        if (kind is list or kind is tuple) and depth <= MAX_DEPTH:
            return kind(convert(item, depth + 1) for item in value)
        return edge_text(value) if isinstance(value, PLAN_SCALARS) else value

    return {key: convert(item, 0) for key, item in arguments.items()}


#: Plan values JSON has no type for (a datetime is a date).
PLAN_SCALARS = (Decimal, date, time, timedelta)


def dumps(value: Any, *, indent: int | None = None, sort_keys: bool = False,
          compact: bool = False) -> str:
    """The JSON text of :func:`plain` ``(value)``: valid JSON, encodable as UTF-8.

    ``compact`` leaves out the spaces after ``,`` and ``:``.
    """
    if indent is None and not sort_keys and not compact:
        return _ENCODER.encode(plain(value))
    return json.dumps(plain(value), ensure_ascii=False, allow_nan=False, indent=indent,
                      sort_keys=sort_keys, separators=(",", ":") if compact else None)


#: :func:`dumps`' usual encoder, made once (``json.dumps`` makes one per call for these
#: options); an encoder keeps nothing between calls.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def decimal_ok(number: int) -> bool:
    """Whether Python writes ``number`` in decimal (its digits are within the limit)."""
    if number.bit_length() <= _SMALL_INT_BITS:
        return True
    limit = sys.get_int_max_str_digits()
    if limit == 0:  # no limit set
        return True
    # bits/log2(10) bounds the digits within one; only numbers that close are converted
    digits = number.bit_length() * math.log10(2)
    if digits < limit - 1:
        return True
    if digits > limit + 1:
        return False
    try:
        int.__repr__(number)
    except ValueError:
        return False
    return True


def safe_repr(value: Any) -> str:
    """``repr(value)``, or the ``repr`` of its :func:`plain` data when that raises (an int
    too long for decimal inside it, a ``__repr__`` that fails)."""
    try:
        return repr(value)
    except Exception:
        pass
    try:
        return repr(plain(value))
    except Exception:
        return f"<{type(value).__name__}>"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encodable(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key) if decimal_ok(key) else hex(key)
    return _text(key)


def _text(value: Any) -> str:
    """``str(value)``, else ``repr(value)``, else ``<type name>`` (each may raise)."""
    for show in (str, repr):
        try:
            return encodable(show(value))
        except Exception:
            continue
    return f"<{type(value).__name__}>"


def _attempt(convert: Any, value: Any) -> Any:
    """What ``convert()`` returns, or the ``repr`` of ``value`` when it raises."""
    try:
        return convert()
    except Exception:
        return safe_repr(value)
