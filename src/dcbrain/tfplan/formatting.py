"""``str.format``, ``format()`` and f-string specs without reflection.

Python's ``str.format`` resolves ``{0.attr}`` and ``{0[key]}`` field paths with
``getattr``: the classic sandbox escape. Here fields are resolved by hand: a field is
an index or a name, optionally followed by ``[key]`` lookups on dicts, lists and tuples;
attribute paths are an error. Widths and precisions are checked before anything is built.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dcbrain.tfplan.errors import FormatLimitError as FormatLimitError

_FORMATTER = string.Formatter()
_SPEC = re.compile(
    r"^(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?"
    r"(?P<type>[a-zA-Z%]?)$", re.S
)
_FIELD = re.compile(r"^(?P<head>[^.\[]*)(?P<rest>(?:\[[^\]]*\])*)(?P<tail>.*)$", re.S)
_PERCENT_SPEC = re.compile(
    r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?([a-zA-Z%])"
)
#: Room for the digits of a float written by ``%f`` or ``%d`` (up to 309).
_FLOAT_DIGITS = 320


def check_spec(spec: str, max_size: int) -> None:
    """Raise if the format ``spec`` asks for a width or precision over ``max_size``."""
    if not spec:
        return
    match = _SPEC.match(spec)
    if match is None:
        numbers = [int(n) for n in re.findall(r"\d+", spec)]
        if any(n > max_size for n in numbers):
            raise FormatLimitError(f"format spec {spec[:40]!r} exceeds the size limit {max_size}")
        return
    for group in ("width", "precision"):
        value = match.group(group)
        if value and int(value) > max_size:
            raise FormatLimitError(
                f"format {group} {int(value)} exceeds the size limit {max_size}"
            )


def spec_parts(spec: str) -> tuple[str, int, int] | None:
    """The type, width and precision of a standard format ``spec``, or ``None`` if it is
    not one."""
    match = _SPEC.match(spec)
    if match is None:
        return None
    return (match.group("type"), int(match.group("width") or 0),
            int(match.group("precision") or 0))


def percent_size(
    template: str,
    values: Any,
    max_size: int,
    rendered_size: Callable[[Any, int], int],
) -> int:
    """An upper bound of ``len(template % values)``; raises :class:`FormatLimitError` for a
    ``*`` or over-limit width or precision.

    Each field writes at most its width, its precision and its value rendered (plus room
    for a float's digits); ``rendered_size(value, limit)`` bounds a value's ``repr``.
    """
    total = len(template)
    fields: list[str | None] = []
    for match in _PERCENT_SPEC.finditer(template):
        name, width, precision, conversion = match.groups()
        for number in (width, precision):
            if number == "*":
                raise FormatLimitError("'*' width or precision is not allowed in tf_plan")
            if number and int(number) > max_size:
                raise FormatLimitError(f"%-format width {int(number)} exceeds the size limit "
                                       f"{max_size}")
        if conversion == "%":
            continue
        total += int(width or 0) + int(precision or 0)
        if conversion in "fFdiu":  # a float written in full: up to 309 digits
            total += _FLOAT_DIGITS
        fields.append(name)
        if total > max_size:
            return total
    if isinstance(values, dict) and any(name is not None for name in fields):
        for name in fields:
            if name is not None and name in values:
                total += rendered_size(values[name], max_size)
                if total > max_size:
                    return total
        return total
    items = values if type(values) is tuple else (values,)
    for item in items:
        total += rendered_size(item, max_size)
        if total > max_size:
            break
    return total


def safe_format(
    template: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    max_size: int,
    render: Callable[[Any, str], str],
    convert: Callable[[Any, str], Any],
) -> str:
    """``template.format(*args, **kwargs)`` with fields resolved without attribute access.

    ``render(value, spec)`` formats one value and ``convert(value, "r"|"s"|"a")`` applies a
    ``!r``/``!s``/``!a`` conversion; both apply the size checks of the caller.
    Automatic field numbering continues into nested specs, as in ``'{:>{}}'``.
    """
    numbering = {"auto": 0, "manual": False}

    def expand(text: str, nested: bool) -> str:
        pieces: list[str] = []
        total = 0
        for literal, field_name, spec, conversion in _FORMATTER.parse(text):
            pieces.append(literal)
            total += len(literal)
            if field_name is None:
                continue
            value = _resolve(field_name, args, kwargs, numbering)
            if conversion in ("r", "s", "a"):
                value = convert(value, conversion)
            elif conversion is not None:
                raise ValueError(f"Unknown conversion specifier {conversion}")
            if spec and "{" in spec:
                if nested:
                    raise ValueError("Max string recursion exceeded")
                spec = expand(spec, True)
            text_value = render(value, spec or "")
            pieces.append(text_value)
            total += len(text_value)
            if total > max_size:
                raise FormatLimitError(f"formatted string exceeds the size limit {max_size}")
        return "".join(pieces)

    return expand(template, False)


def _resolve(
    field_name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    numbering: dict[str, Any],
) -> Any:
    match = _FIELD.match(field_name)
    assert match is not None  # the pattern matches every string
    head, rest, tail = match.group("head"), match.group("rest"), match.group("tail")
    if tail:
        raise ValueError(f"field {field_name!r}: attribute access in format fields is not "
                         "allowed in tf_plan")
    if head == "":
        if numbering["manual"]:
            raise ValueError("cannot switch from manual field specification to automatic "
                             "field numbering")
        value = _positional(args, numbering["auto"])
        numbering["auto"] += 1
    elif head.isdigit():
        if numbering["auto"]:
            raise ValueError("cannot switch from automatic field numbering to manual field "
                             "specification")
        numbering["manual"] = True
        value = _positional(args, int(head))
    else:
        if head not in kwargs:
            raise KeyError(head)
        value = kwargs[head]
    for key in re.findall(r"\[([^\]]*)\]", rest):
        if isinstance(value, dict):
            value = value[int(key) if key.isdigit() and key not in value else key]
        elif isinstance(value, list | tuple) and key.isdigit():
            value = value[int(key)]
        else:
            raise ValueError(f"field {field_name!r}: index lookups in format fields work on "
                             "dicts, lists and tuples only")
    return value


def _positional(args: Sequence[Any], index: int) -> Any:
    if index >= len(args):
        raise IndexError(f"Replacement index {index} out of range for positional args tuple")
    return args[index]
