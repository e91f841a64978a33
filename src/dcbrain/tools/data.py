"""A tool's results and examples as plan data: JSON-like values, with the plan's scalar
values (Decimal, date, datetime, time, timedelta) kept as themselves."""

from __future__ import annotations

import re
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError, to_jsonable_python

from dcbrain.exceptions import TFToolError
from dcbrain.values.jsonsafe import PLAN_SCALARS


def checked_example(example: Any, owner: str) -> Any:
    """``example`` of a tool as JSON data, refused when it is not JSON-like."""
    if example is None:
        return None
    return check_json_like(to_json_data(example, f"{owner} example"), f"{owner} example")


def check_json_like(value: Any, where: str, _depth: int = 0) -> Any:
    """Return ``value`` if it is JSON-like data (tuples become lists), else raise.

    Decimal, date, datetime, time and timedelta count as JSON-like: they stay themselves
    as plan values and become their ISO text only where data leaves the process.
    """
    if _depth > 100:
        raise TFToolError(f"{where}: nested deeper than 100 levels")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [check_json_like(item, where, _depth + 1) for item in value]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TFToolError(f"{where}: dict keys must be str, got {type(key).__name__}")
        return {key: check_json_like(item, where, _depth + 1) for key, item in value.items()}
    if isinstance(value, PLAN_SCALARS):
        return value
    raise TFToolError(f"{where}: {type(value).__name__} is not JSON-like data")


_JSON_SCALARS = frozenset({bool, int, float, str})


_UNKNOWN_TYPE = re.compile(r"unknown type: <class '([^']+)'>")


#: Dumps any value pydantic knows in Python mode: models and dataclasses become dicts,
#: Decimals and datetimes stay themselves.
_ANY: TypeAdapter[Any] = TypeAdapter(Any)


def to_json_data(value: Any, where: str) -> Any:
    """``value`` as plain data (models, dataclasses, enums, UUIDs... dumped; Decimals,
    dates, datetimes, times and timedeltas kept), else raise."""
    try:
        return check_json_like(value, where)
    except TFToolError:
        pass
    try:
        return _dumped(_ANY.dump_python(value, mode="python"), where, 0)
    except PydanticSerializationError as exc:
        match = _UNKNOWN_TYPE.search(str(exc))
        name = match.group(1).rsplit(".", 1)[-1] if match else type(value).__name__
        raise TFToolError(f"{where}: {name} is not JSON-like data") from None
    except (ValueError, RecursionError) as exc:
        raise TFToolError(f"{where}: cannot be converted to JSON data: {exc}") from None


def _dumped(value: Any, where: str, depth: int) -> Any:
    """Plain data of pydantic's Python-mode dump: what JSON mode would write, except the
    plan value types, which are kept."""
    if depth > 100:
        raise TFToolError(f"{where}: nested deeper than 100 levels")
    if value is None or type(value) in _JSON_SCALARS or isinstance(value, PLAN_SCALARS):
        return value  # exactly: a str or int enum is dumped as JSON mode does, to its value
    if type(value) in (list, tuple, set, frozenset):
        return [_dumped(item, where, depth + 1) for item in value]
    if type(value) is dict:
        return {key if type(key) is str else str(to_jsonable_python(key)):
                _dumped(item, where, depth + 1) for key, item in value.items()}
    return check_json_like(to_jsonable_python(value), where, depth)
