"""Decimal and date values on the wire are plain data, and Decimal arithmetic is paid for.

A ``{"$decimal": ...}`` or date form read back from a journal is checked before it becomes
a value: its length, the Decimal's exponent and digits, no signaling NaN; one that fails
stays the dict it was. A Decimal coming from a tool, or built by ``Decimal()`` in a plan,
has at most 4,300 digits (CPython's limit of an int's), and products, divisions and
powers of a long one cost operations by its size, as an int's do.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from dcbrain.journal import from_journal_value, journal_value
from dcbrain.tfplan import Interpreter, SizeLimitExceeded
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.values.scalars import MAX_DECIMAL_DIGITS

ISOLATIONS = [pytest.param("inprocess", id="inprocess"), pytest.param("process", id="sandbox")]


@pytest.mark.parametrize("form", [
    {"$decimal": "1" * (MAX_DECIMAL_DIGITS + 1)},  # too many digits
    {"$decimal": "1" * 100_000},  # too long to parse at all
    {"$decimal": "1E+1000000"},  # past the exponent range
    {"$decimal": "-1E-1000000"},
    {"$decimal": "sNaN"},
    {"$decimal": "not a number"},
    {"$date": "2024-01-01" + " " * 100},
    {"$datetime": "2024-01-01T00:00:00" + "0" * 1000},
    {"$time": "25:00"},
    {"$timedelta": "1," * 100},
])
def test_a_hostile_wire_form_stays_a_dict(form: dict[str, str]) -> None:
    assert from_journal_value(form) == form
    assert from_journal_value([form]) == [form]


def test_wire_forms_within_the_limits_become_values() -> None:
    values = [Decimal("129.99"), Decimal("1" * MAX_DECIMAL_DIGITS), Decimal("-1E+999999"),
              Decimal("NaN"), Decimal("-Infinity")]
    back = from_journal_value(journal_value(values))
    assert [str(value) for value in back] == [str(value) for value in values]


def long_decimal() -> Decimal:
    """A Decimal of 4,000 digits."""
    return Decimal("7" * 4000)


def too_long() -> Decimal:
    return Decimal("7" * (MAX_DECIMAL_DIGITS + 1))


def signaling() -> Decimal:
    return Decimal("sNaN")


@pytest.mark.parametrize("isolation", ISOLATIONS)
@pytest.mark.parametrize(("tool", "message"), [
    (too_long, "digits"), (signaling, "signaling NaN")])
def test_a_decimal_a_plan_may_not_hold_is_refused_from_a_tool(
    isolation: Isolation, tool: Any, message: str,
) -> None:
    with pytest.raises(SizeLimitExceeded, match=message) as caught:
        Interpreter({"get": tool}, isolation=isolation).run("x = get()\nx")
    assert caught.value.line == 1


@pytest.mark.parametrize("plan", [
    f"Decimal('1' * {MAX_DECIMAL_DIGITS + 1})",
    "Decimal('1' * 1000000)",
    "Decimal(10 ** 20000)",
    "Decimal('sNaN')",
])
def test_decimal_in_a_plan_is_bounded_before_it_is_built(plan: str) -> None:
    with pytest.raises(SizeLimitExceeded):
        Interpreter(isolation="inprocess").run("from decimal import Decimal\n" + plan)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_arithmetic_on_a_long_decimal_costs_its_size(isolation: Isolation) -> None:
    interpreter = Interpreter({"get": long_decimal, "small": lambda: Decimal("1.5")},
                              isolation=isolation)

    def operations(source: str, expression: str) -> int:
        plan = f"d = {source}\nfor i in range(200):\n    y = {expression}\n"
        return interpreter.run(plan).operations

    for expression in ("d * d", "d * 3", "d % d", "d // d", "divmod(d, d)", "d ** 2"):
        long_ops = operations("get()", expression)
        short_ops = operations("small()", expression)
        assert long_ops >= short_ops + 200, f"{expression}: {long_ops} vs {short_ops}"
    # a product of two 4,000-digit Decimals (211 words) is paid as ints of that size are
    # (over a thousand operations, with Karatsuba's method)
    assert operations("get()", "d * d") >= 200 * 1000
