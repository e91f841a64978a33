"""Decimal, date, datetime, time and timedelta: plan values that are neither JSON nor
containers.

They are kept as themselves from a tool's result to a tool's argument, so money adds up
as money and dates compare as dates. At the boundary every one is copied to its exact
type (a subclass such as pandas' ``Timestamp`` would bring its own methods) and a
datetime's or time's zone becomes a fixed offset (:class:`datetime.timezone`), the only
zone that crosses the sandbox and the journal unchanged.

A plan's decimal arithmetic runs in :data:`PLAN_DECIMAL_CONTEXT` whatever context the host
set: 28 digits and exponents within ±999,999, so one operation stays a small C call; a
Decimal coming in with a larger exponent is refused.
"""

from __future__ import annotations

import decimal
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

from dcbrain.exceptions import ScalarError as ScalarError

#: The decimal context of every plan (Python's default context, fixed).
PLAN_DECIMAL_CONTEXT = decimal.Context(
    prec=28, rounding=decimal.ROUND_HALF_EVEN, Emin=-999_999, Emax=999_999, capitals=1,
    clamp=0, flags=[], traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                              decimal.Overflow],
)
#: Largest adjusted exponent (in magnitude) of a plan's Decimal.
MAX_DECIMAL_EXPONENT = 999_999
#: Most digits of a plan's Decimal (its arithmetic makes at most 28; one from a tool, the
#: wire or ``Decimal(text)`` may have more, up to CPython's limit of an int's digits).
MAX_DECIMAL_DIGITS = 4300
#: Longest text of a Decimal on the wire: its digits, a sign, a point and an exponent.
MAX_DECIMAL_TEXT = MAX_DECIMAL_DIGITS + 16
#: Longest wire text of a date, datetime, time or timedelta (ISO text with an offset).
MAX_TEMPORAL_TEXT = 64

#: The types of this module, exactly (subclasses are copied to these at the boundary).
SCALAR_TYPES: frozenset[type] = frozenset({Decimal, date, datetime, time, timedelta})
TEMPORAL_TYPES: frozenset[type] = frozenset({date, datetime, time})


def plan_scalar(value: Any, where: str) -> Any:
    """``value`` (a Decimal, date, datetime, time or timedelta, or a subclass) as the
    exact type a plan holds, or ``None`` if it is none of them; raises
    :class:`ScalarError` for a Decimal whose exponent is past the plan's limit."""
    kind = type(value)
    if kind is Decimal:
        return checked_decimal(value, where)
    if kind is date or kind is timedelta:
        return value
    if kind is datetime or kind is time:
        tzinfo = value.tzinfo
        return value if tzinfo is None or type(tzinfo) is timezone else _fixed_zone(value)
    if isinstance(value, Decimal):
        return checked_decimal(Decimal(value), where)
    if isinstance(value, datetime):
        copied = datetime(value.year, value.month, value.day, value.hour, value.minute,
                          value.second, value.microsecond, value.tzinfo, fold=value.fold)
        return plan_scalar(copied, where)
    if isinstance(value, date):
        return date(value.year, value.month, value.day)
    if isinstance(value, time):
        return plan_scalar(time(value.hour, value.minute, value.second, value.microsecond,
                                value.tzinfo, fold=value.fold), where)
    if isinstance(value, timedelta):
        return timedelta(value.days, value.seconds, value.microseconds)
    return None


def _fixed_zone(value: datetime | time) -> datetime | time:
    offset = value.utcoffset()
    return value.replace(tzinfo=None if offset is None else timezone(offset))


def checked_decimal(value: Decimal, where: str) -> Decimal:
    """``value`` if a plan may hold it: an exponent within ±:data:`MAX_DECIMAL_EXPONENT`,
    at most :data:`MAX_DECIMAL_DIGITS` digits, not a signaling NaN (which raises where it
    is compared or hashed); else :class:`ScalarError`."""
    if value.is_finite():
        if abs(value.adjusted()) > MAX_DECIMAL_EXPONENT:
            raise ScalarError(f"{where}: Decimal exponent {value.adjusted()} is past the "
                              f"limit ±{MAX_DECIMAL_EXPONENT}")
        digits = decimal_digits(value)
        if digits > MAX_DECIMAL_DIGITS:
            raise ScalarError(f"{where}: Decimal of {digits} digits is past the limit of "
                              f"{MAX_DECIMAL_DIGITS} digits")
    elif value.is_snan():
        raise ScalarError(f"{where}: a signaling NaN Decimal is not a plan value")
    return value


def decimal_digits(value: Decimal) -> int:
    """How many digits the coefficient of ``value`` has."""
    return len(value.as_tuple().digits)


def rendered_scalar_size(value: Any) -> int:
    """An upper bound of ``len(repr(value))`` (and of ``str``) for these types."""
    if type(value) is Decimal:
        # Decimal('<digits>E+<exponent>'): scientific notation keeps str() short
        return decimal_digits(value) + 24
    return 110  # datetime.datetime(..., tzinfo=datetime.timezone(datetime.timedelta(...)))


#: Most digits of an int converted from a Decimal: the conversion takes time quadratic in
#: them, as CPython's from decimal text does (whose limit this is).
MAX_INTEGER_DIGITS = 4300


def integer_digits(value: Decimal) -> int:
    """An upper bound of the decimal digits of ``int(value)``."""
    return max(value.adjusted(), 0) + 1 if value.is_finite() else 0


def decimal_format_size(value: Decimal, spec_type: str, width: int, precision: int) -> int:
    """An upper bound of ``len(format(value, spec))`` for a spec of this type, width and
    precision: fixed-point writes every digit up to the exponent."""
    size = decimal_digits(value) + width + precision + 32
    if spec_type in ("f", "F", "%") and value.is_finite():
        size += abs(value.adjusted())
    return size + size // 3  # thousands separators


#: strftime directives a plan may use, and the most characters each writes.
STRFTIME_WIDTHS: dict[str, int] = {
    "a": 16, "A": 16, "w": 1, "d": 2, "b": 16, "B": 16, "m": 2, "y": 2, "Y": 4, "H": 2,
    "I": 2, "p": 8, "M": 2, "S": 2, "f": 6, "z": 11, "Z": 16, "j": 3, "U": 2, "W": 2,
    "c": 48, "x": 24, "X": 24, "%": 1, "G": 4, "u": 1, "V": 2, "e": 2, "F": 10, "T": 8,
    "D": 8, "R": 5, "n": 1, "t": 1,
}


def strftime_size(spec: str) -> int:
    """An upper bound of the length of ``value.strftime(spec)``; raises ``ValueError``
    for a directive outside :data:`STRFTIME_WIDTHS` (flags and widths such as ``%-d`` or
    ``%10Y`` are the C library's, and can write far more than they read)."""
    size = 0
    index = 0
    while index < len(spec):
        char = spec[index]
        if char != "%":
            size += 1
            index += 1
            continue
        directive = spec[index + 1:index + 2]
        if directive not in STRFTIME_WIDTHS:
            shown = spec[index:index + 2]
            raise ValueError(f"strftime directive {shown!r} is not supported in tf_plan "
                             f"(use one of %{' %'.join(sorted(STRFTIME_WIDTHS))})")
        size += STRFTIME_WIDTHS[directive]
        index += 2
    return size


#: Journal tags of these types, and how each is read back.
JOURNAL_TAGS: dict[type, str] = {
    Decimal: "$decimal", date: "$date", datetime: "$datetime", time: "$time",
    timedelta: "$timedelta",
}


def journal_text(value: Any) -> str:
    """The journal's text of one of these values: read back by :func:`from_journal_text`."""
    if type(value) is timedelta:
        return f"{value.days},{value.seconds},{value.microseconds}"
    if type(value) is Decimal:
        return str(value)
    return value.isoformat()  # type: ignore[no-any-return]


def from_journal_text(tag: str, text: str) -> Any:
    """The value that :func:`journal_text` wrote under ``tag``; raises ``ValueError`` for
    text that is not one, checked before it is parsed: too long (:data:`MAX_DECIMAL_TEXT`,
    :data:`MAX_TEMPORAL_TEXT`), a Decimal a plan may not hold (:func:`checked_decimal`),
    a date out of range."""
    limit = MAX_DECIMAL_TEXT if tag == "$decimal" else MAX_TEMPORAL_TEXT
    if len(text) > limit:
        raise ValueError(f"{tag} text of {len(text)} characters (at most {limit})")
    if tag == "$decimal":
        try:
            return checked_decimal(Decimal(text), tag)
        except decimal.InvalidOperation:
            raise ValueError(f"{tag} text is not a Decimal") from None
    if tag == "$date":
        return date.fromisoformat(text)
    if tag == "$datetime":
        return datetime.fromisoformat(text)
    if tag == "$time":
        return time.fromisoformat(text)
    if tag == "$timedelta":
        days, seconds, microseconds = (int(part) for part in text.split(","))
        return timedelta(days, seconds, microseconds)
    raise ValueError(f"unknown journal tag {tag!r}")


_DECIMAL_SIGNALS: dict[str, tuple[str, str]] = {
    "DivisionByZero": ("ZeroDivisionError", "Decimal division by zero"),
    "DivisionUndefined": ("ZeroDivisionError", "Decimal division of zero by zero"),
    "Overflow": ("OverflowError", f"Decimal result past the exponent limit "
                                  f"±{MAX_DECIMAL_EXPONENT}"),
    "DivisionImpossible": ("ArithmeticError", "Decimal integer division or remainder with a "
                                              "quotient of more than 28 digits"),
    "ConversionSyntax": ("ValueError", "invalid literal for Decimal"),
}


def decimal_error(exc: decimal.DecimalException) -> tuple[str, str]:
    """The kind and message a plan sees for a decimal signal (Python's message is a list
    of signal classes)."""
    signals = exc.args[0] if exc.args and isinstance(exc.args[0], list) else [type(exc)]
    for signal in signals:
        known = _DECIMAL_SIGNALS.get(getattr(signal, "__name__", ""))
        if known is not None:
            return known
    return "ArithmeticError", "invalid Decimal operation (a NaN compared, or a result " \
                              "needing more than 28 digits)"
