"""Strings a plan renders: ``str``/``repr``, f-strings, ``str.format``, ``%``, the str
methods whose result can be far larger than their object, ``print`` and ``json.dumps``.

Every one of them is sized before Python builds the string: a single ``format``, ``%``,
``join`` or ``json.dumps`` call allocates its whole result in C.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from dcbrain.tfplan.errors import OutputLimitExceeded, SizeLimitExceeded
from dcbrain.tfplan.formatting import (
    FormatLimitError,
    check_spec,
    percent_size,
    safe_format,
    spec_parts,
)
from dcbrain.tfplan.guards.budget import ALLOC_DIVISOR, Budget
from dcbrain.tfplan.state import RunState
from dcbrain.tfplan.values import nesting_depth, rendered_size, rendered_size_exceeds
from dcbrain.values.scalars import (
    MAX_INTEGER_DIGITS,
    SCALAR_TYPES,
    decimal_format_size,
    integer_digits,
    strftime_size,
)

_INTS = (int, bool)
_NATIVE = frozenset({str, int, float, bool})
_SHORT_SCALARS = frozenset({int, float, bool, type(None)})
_JSON_DUMPS_OPTIONS = frozenset({"indent", "sort_keys", "ensure_ascii", "separators"})


class Strings:
    """Rendering and formatting guards of one run."""

    def __init__(self, budget: Budget, state: RunState) -> None:
        self.budget = budget
        self.state = state
        self.max_size = budget.max_size
        self._checked_specs: set[str] = set()
        self.methods: dict[str, Callable[..., Any]] = {
            "center": self._pad("center"), "ljust": self._pad("ljust"),
            "rjust": self._pad("rjust"), "zfill": self._pad("zfill"),
            "expandtabs": self.expandtabs, "replace": self.replace, "join": self.join,
            "format": self.str_format,
        }

    def _fits(self, value: Any, what: str) -> None:
        if rendered_size_exceeds(value, self.max_size):
            raise self.budget.too_large(what, self.max_size + 1)

    def _spec(self, spec: str) -> None:
        try:
            check_spec(spec, self.max_size)
        except FormatLimitError as exc:
            raise SizeLimitExceeded(str(exc)) from None

    # -- rendering -------------------------------------------------------------------
    def render(self, value: Any, spec: str = "") -> str:
        """``format(value, spec)``, sized first."""
        self._spec(spec)
        self._fits(value, "rendered value")
        if spec and value.__class__ in SCALAR_TYPES:
            self._scalar_spec(value, spec)
        text = format(value, spec)
        self.budget.charge(1 + len(text) // ALLOC_DIVISOR)
        return text

    def _scalar_spec(self, value: Any, spec: str) -> None:
        """Size ``format(value, spec)`` of a Decimal (fixed-point writes every digit up to
        its exponent) or of a date, datetime or time (a strftime format)."""
        kind = value.__class__
        if kind is Decimal:
            parts = spec_parts(spec)
            if parts is None:
                raise ValueError(f"invalid format spec {spec[:40]!r} for Decimal")
            size = decimal_format_size(value, *parts)
        elif kind is timedelta:
            raise TypeError("unsupported format string passed to timedelta.__format__")
        else:
            size = strftime_size(spec)
        if size > self.max_size:
            raise self.budget.too_large("formatted str", size)

    def strftime(self, value: Any, spec: Any) -> str:
        """``value.strftime(spec)`` of a date, datetime or time, sized first."""
        if spec.__class__ is not str:
            raise TypeError(f"strftime() argument 1 must be str, not {type(spec).__name__}")
        size = strftime_size(spec)
        if size > self.max_size:
            raise self.budget.too_large("formatted str", size)
        self.budget.charge(1 + size // ALLOC_DIVISOR)
        return value.strftime(spec)  # type: ignore[no-any-return]

    def formatted_value(self, value: Any, conversion: int, spec: str) -> Any:
        """One field of an f-string; plain scalars are left for CPython to format."""
        if conversion == -1 and value.__class__ in _NATIVE:
            if not spec:
                return value
            if spec not in self._checked_specs:
                self._spec(spec)
                if len(self._checked_specs) < 256:
                    self._checked_specs.add(spec)
            return format(value, spec)
        if conversion != -1:
            value = self.convert(value, chr(conversion))
        return self.render(value, spec)

    def join_fstring(self, *parts: Any) -> str:
        """An f-string with many fields: their total size is checked before joining."""
        pieces = [part if part.__class__ is str else format(part) for part in parts]
        size = sum(map(len, pieces))
        if size > self.max_size:
            raise self.budget.too_large("str", size)
        self.budget.charge(1 + size // ALLOC_DIVISOR)
        return "".join(pieces)

    def convert(self, value: Any, conversion: str) -> str:
        """``!r``, ``!s`` and ``!a`` of f-strings and ``str.format``, size-checked first."""
        if conversion == "r":
            return self.plan_repr(value)
        if conversion == "s":
            return self.plan_str(value)
        self._fits(value, "rendered value")
        return self.budget.check_result(ascii(value))  # type: ignore[no-any-return]

    def plan_str(self, value: Any = "") -> str:
        kind = value.__class__
        if kind is str:
            return value  # type: ignore[no-any-return]
        if kind in _SHORT_SCALARS:  # CPython caps an int's decimal digits itself
            return str(value)
        self._fits(value, "rendered value")
        return self.budget.check_result(str(value))  # type: ignore[no-any-return]

    def plan_repr(self, value: Any) -> str:
        self._fits(value, "rendered value")
        return self.budget.check_result(repr(value))  # type: ignore[no-any-return]

    # -- formatting ------------------------------------------------------------------
    def str_format(self, template: str, *args: Any, **kwargs: Any) -> str:
        """``str.format`` without attribute access; every piece sized as it is built."""
        try:
            return safe_format(template, args, kwargs, self.max_size, self.render, self.convert)
        except FormatLimitError as exc:
            raise SizeLimitExceeded(str(exc)) from None

    def percent(self, template: str, values: Any) -> str:
        """``template % values``, its whole result sized first."""
        try:
            size = percent_size(template, values, self.max_size, rendered_size)
        except FormatLimitError as exc:
            raise SizeLimitExceeded(str(exc)) from None
        if size > self.max_size:
            raise self.budget.too_large("formatted str", size)
        for value in (values.values() if values.__class__ is dict else
                      values if values.__class__ is tuple else (values,)):
            if value.__class__ is Decimal and integer_digits(value) > MAX_INTEGER_DIGITS:
                # %d and %x convert it to an int first
                raise SizeLimitExceeded(f"%-format of a Decimal of {integer_digits(value)} "
                                        f"integer digits exceeds the limit of "
                                        f"{MAX_INTEGER_DIGITS} digits")
        return self.budget.check_result(template % values)  # type: ignore[no-any-return]

    # -- str methods that grow -------------------------------------------------------
    def _pad(self, method: str) -> Callable[..., str]:
        def pad(text: str, width: Any, *args: Any) -> str:
            if width.__class__ in _INTS and width > self.max_size:
                raise self.budget.too_large("str", width)
            return self.budget.check_result(  # type: ignore[no-any-return]
                getattr(text, method)(width, *args))

        pad.__qualname__ = f"Strings.{method}"  # named in argument errors as the str method
        return pad

    def expandtabs(self, text: str, tabsize: Any = 8) -> str:
        if tabsize.__class__ in _INTS:
            size = len(text) + text.count("\t") * max(tabsize, 0)
            if size > self.max_size:
                raise self.budget.too_large("str", size)
        return self.budget.check_result(text.expandtabs(tabsize))  # type: ignore[no-any-return]

    def replace(self, text: str, old: Any, new: Any, count: Any = -1) -> str:
        if old.__class__ is str and new.__class__ is str and count.__class__ in _INTS:
            hits = len(text) + 1 if old == "" else text.count(old)
            if count >= 0:
                hits = min(hits, count)
            size = len(text) + hits * (len(new) - len(old))
            if size > self.max_size:
                raise self.budget.too_large("str", size)
        return self.budget.check_result(  # type: ignore[no-any-return]
            text.replace(old, new, count))

    def join(self, separator: str, *args: Any) -> str:
        if len(args) != 1:
            raise TypeError(f"str.join() takes exactly one argument ({len(args)} given)")
        if not hasattr(args[0].__class__, "__iter__"):
            raise TypeError("can only join an iterable")
        items = self.budget.materialize(args[0])
        size = len(separator) * max(len(items) - 1, 0)
        for item in items:
            if item.__class__ is str:
                size += len(item)
        if size > self.max_size:
            raise self.budget.too_large("str", size)
        return self.budget.check_result(separator.join(items))  # type: ignore[no-any-return]

    # -- output ----------------------------------------------------------------------
    def plan_print(self, *args: Any, sep: Any = " ", end: Any = "\n") -> None:
        """``print``: captured, and stopped before its text passes the output limit."""
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if sep.__class__ is not str or end.__class__ is not str:
            raise TypeError("sep and end must be None or a string")
        state = self.state
        max_output = state.limits.max_output_chars
        room = max_output - state.output_chars - len(end)
        pieces: list[str] = []
        for index, arg in enumerate(args):
            piece = self.plan_str(arg)
            room -= len(piece) + (len(sep) if index else 0)
            if room < 0:
                break
            pieces.append(piece)
        with state.lock:
            if room < 0 or state.output_chars + sum(map(len, pieces)) > max_output:
                state.output_chars = max_output + 1
                raise OutputLimitExceeded(f"plan printed more than {max_output} characters")
            text = sep.join(pieces) + end
            state.output_chars += len(text)
            state.output.append(text)

    def json_dumps(self, value: Any, **options: Any) -> str:
        """``json.dumps`` with its whole output (indentation and separators included)
        bounded by the size limit before or while it is built."""
        unknown = set(options) - _JSON_DUMPS_OPTIONS
        if unknown:
            raise TypeError(f"json.dumps() got unsupported option(s): {', '.join(sorted(unknown))}")
        indent, separators = options.get("indent"), options.get("separators")
        if indent is None and separators is None:
            if rendered_size_exceeds(value, self.max_size):
                raise SizeLimitExceeded(
                    f"json.dumps() result would exceed the size limit {self.max_size}")
            return self.budget.check_result(json.dumps(value, **options))  # type: ignore[no-any-return]
        if indent is not None:
            width = indent if indent.__class__ in _INTS else len(indent) \
                if indent.__class__ is str else 0
            # every line is indented up to the value's depth, in one piece
            if width * (nesting_depth(value) + 1) > self.max_size:
                raise SizeLimitExceeded(
                    f"json.dumps() indentation would exceed the size limit {self.max_size}")
        encoder = json.JSONEncoder(**options)
        pieces: list[str] = []
        size = 0
        for chunk in encoder.iterencode(value):  # Python's encoder: piece by piece
            size += len(chunk)
            if size > self.max_size:
                raise SizeLimitExceeded(
                    f"json.dumps() result would exceed the size limit {self.max_size}")
            pieces.append(chunk)
        self.budget.charge(1 + size // ALLOC_DIVISOR)
        return "".join(pieces)
