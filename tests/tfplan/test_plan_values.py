"""Decimal, date, datetime, time and timedelta are plan values: they compute as in Python,
in process and in the sandbox, and nothing about them reaches a class or a module."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from dcbrain.tfplan import Interpreter, Limits
from dcbrain.tfplan.errors import SizeLimitExceeded, TFInterpreterError, TFSyntaxError
from dcbrain.tools import Tool

ISOLATIONS = pytest.mark.parametrize("isolation", ["process", "inprocess"])


class Order(BaseModel):
    order_id: str
    total: Decimal
    placed: datetime
    due: date


def lookup_order(order_id: str) -> Order:
    """Look an order up."""
    return Order(order_id=order_id, total=Decimal("129.99"),
                 placed=datetime(2026, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=2))),
                 due=date(2026, 3, 31))


RECEIVED: list[Any] = []


def refund(order_id: str, amount: Decimal, on: date) -> dict[str, Any]:
    """Refund part of an order."""
    RECEIVED.append((amount, on))
    return {"order_id": order_id, "refunded": amount}


def huge() -> dict[str, Any]:
    return {"big": Decimal("1e999999"), "when": datetime(2026, 1, 2, 3, 4, 5)}


def interpreter(isolation: str, **kwargs: Any) -> Interpreter:
    # Tool.call: the boundary a brain's tools go through (pydantic validation and dump)
    return Interpreter(callables={"lookup_order": Tool(lookup_order).call,
                                  "refund": Tool(refund).call, "huge": huge},
                       isolation=isolation,  # type: ignore[arg-type]
                       **kwargs)


def run(isolation: str, source: str) -> Any:
    return interpreter(isolation).run(source).value


def failure(isolation: str, source: str) -> TFInterpreterError:
    with pytest.raises(TFInterpreterError) as caught:
        interpreter(isolation).run(source)
    return caught.value


@ISOLATIONS
def test_money_from_a_model_stays_a_decimal(isolation: str) -> None:
    value = run(isolation, 'o = lookup_order(order_id="A1")\n'
                           'return [o["total"] * 2, o["total"] + 1, round(o["total"] / 3, 2)]')
    assert value == [Decimal("259.98"), Decimal("130.99"), Decimal("43.33")]
    assert all(type(item) is Decimal for item in value)


@ISOLATIONS
def test_a_decimal_plus_a_str_is_a_positioned_type_error(isolation: str) -> None:
    error = failure(isolation, 'o = lookup_order(order_id="A1")\nx = o["total"] + "1"')
    assert (error.kind, error.line, error.col) == ("TypeError", 2, 5)
    assert "unsupported operand type(s) for +" in error.message


@ISOLATIONS
def test_dates_compare_subtract_and_have_fields(isolation: str) -> None:
    value = run(isolation, """\
from datetime import date, timedelta
o = lookup_order(order_id="A1")
placed = o["placed"]
left = o["due"] - placed.date()
return [left, left.days, o["due"] > date(2026, 3, 1), placed + timedelta(hours=1),
        placed.year, placed.month, placed.hour, placed.minute, placed.weekday(),
        placed.isoformat(), placed.utcoffset().total_seconds(), o["due"] + timedelta(days=1)]
""")
    assert value == [timedelta(days=30), 30, True,
                     datetime(2026, 3, 1, 10, 30, tzinfo=timezone(timedelta(hours=2))),
                     2026, 3, 9, 30, 6, "2026-03-01T09:30:00+02:00", 7200.0, date(2026, 4, 1)]


@ISOLATIONS
def test_format_specs_render_money_and_dates(isolation: str) -> None:
    value = run(isolation, """\
o = lookup_order(order_id="A1")
total = o["total"]
when = o["placed"]
return [f"{total:.2f}", f"{total * 1000:,.1f}", f"{when:%Y-%m-%d %H:%M}", "{:%d/%m}".format(when),
        when.strftime("%A"), str(total), int(total), float(total)]
""")
    assert value == ["129.99", "129,990.0", "2026-03-01 09:30", "01/03", "Sunday", "129.99",
                     129, 129.99]


@ISOLATIONS
def test_a_tool_annotated_with_decimal_and_date_receives_them(isolation: str) -> None:
    RECEIVED.clear()
    value = run(isolation, """\
o = lookup_order(order_id="A1")
r = refund(order_id="A1", amount=o["total"] / 2, on=o["due"])
return r["refunded"]
""")
    assert value == Decimal("64.995") and type(value) is Decimal
    [(amount, on)] = RECEIVED
    assert (type(amount), amount, type(on), on) == (Decimal, Decimal("64.995"), date,
                                                    date(2026, 3, 31))


@ISOLATIONS
def test_the_plan_builds_values_from_the_datetime_and_decimal_modules(isolation: str) -> None:
    value = run(isolation, """\
import decimal
from datetime import datetime, timezone, time
price = decimal.Decimal("19.90") * 3
start = datetime.fromisoformat("2026-01-01T08:00")
return [price, start.time() == time(8), datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat(),
        hash(start) == hash(datetime(2026, 1, 1, 8))]
""")
    assert value == [Decimal("59.70"), True, "2026-01-01T00:00:00+00:00", True]


@ISOLATIONS
@pytest.mark.parametrize(("source", "kind", "words"), [
    ('huge()["big"] ** 10', "OverflowError", "exponent limit"),
    ('int(huge()["big"])', "SizeLimitExceeded", "4300 digits"),
    ('round(huge()["big"])', "SizeLimitExceeded", "4300 digits"),
    ('math.floor(huge()["big"])', "SizeLimitExceeded", "4300 digits"),
    ('"%d" % huge()["big"]', "SizeLimitExceeded", "4300 digits"),
    ('f"{huge()[\'big\']:f}"', "SizeLimitExceeded", "size limit"),
    ('format(huge()["big"], ",.2f")', "SizeLimitExceeded", "size limit"),
    ('decimal.Decimal("1e99999999")', "SizeLimitExceeded", "past the limit"),
    ('huge()["big"] // decimal.Decimal("0.001")', "ArithmeticError", "more than 28 digits"),
    ('decimal.Decimal(1) / 0', "ZeroDivisionError", "division by zero"),
    ('decimal.Decimal("one")', "ValueError", "invalid literal for Decimal"),
    ('f"{huge()[\'when\']:%1000000000Y}"', "SizeLimitExceeded", "size limit"),
    ('huge()["when"].strftime("%-d")', "ValueError", "not supported in tf_plan"),
    ('huge()["when"].strftime("%c" * 30000)', "SizeLimitExceeded", "size limit"),
    ('datetime.datetime.now()', "AttributeError", "no attribute 'now'"),
    ('huge()["when"].tzinfo', "AttributeError", "no attribute 'tzinfo'"),
    ('huge()["big"].as_tuple()', "AttributeError", "no attribute 'as_tuple'"),
    ('huge()["big"].quantize', "AttributeError", "no attribute 'quantize'"),
    ('huge()["when"].astimezone()', "AttributeError", "no attribute 'astimezone'"),
    ('type(huge()["big"])', "NameError", "'type' is not defined"),
    ('"{0.real}".format(huge()["big"])', "ValueError", "attribute"),
])
def test_hostile_uses_end_in_a_clear_positioned_error(
    isolation: str, source: str, kind: str, words: str
) -> None:
    plan = f"x = 1\nresult = {source}"
    with pytest.raises(TFInterpreterError) as caught:
        Interpreter(callables={"huge": huge}, isolation=isolation,  # type: ignore[arg-type]
                    limits=Limits(timeout_s=20)).run(plan)
    error = caught.value
    assert error.kind == kind, error
    assert words in error.message
    assert error.line == 2


@pytest.mark.parametrize("source", [
    'huge()["big"].__class__', 'huge()["when"].__reduce__()',
    'from datetime import datetime as d\nd.__subclasses__()', 'import datetime.sys',
    'from decimal import getcontext',
])
def test_no_class_or_module_is_reachable_through_these_values(source: str) -> None:
    with pytest.raises((TFSyntaxError, TFInterpreterError)) as caught:
        Interpreter(callables={"huge": huge}, isolation="inprocess").run(source)
    assert caught.value.line >= 1


def test_a_plan_computes_in_its_own_decimal_context_whatever_the_host_set() -> None:
    import decimal

    with decimal.localcontext(decimal.Context(prec=5000, Emax=10**17)):
        value = Interpreter(callables={"huge": huge}, isolation="inprocess").run(
            'decimal.Decimal(1) / 3').value
    assert value == Decimal("0.3333333333333333333333333333")  # 28 digits, not 5000


def test_a_tool_returning_a_decimal_past_the_exponent_limit_is_refused() -> None:
    with pytest.raises(SizeLimitExceeded) as caught:
        Interpreter(callables={"far": lambda: Decimal("1e9999999")},
                    isolation="inprocess").run("far()")
    assert "past the limit" in caught.value.message and caught.value.line == 1


def test_a_datetime_in_another_zone_arrives_with_its_fixed_offset() -> None:
    from zoneinfo import ZoneInfo

    zoned = datetime(2026, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris"))
    value = Interpreter(callables={"when": lambda: zoned}, isolation="process").run(
        "when()").value
    assert value == zoned and type(value.tzinfo) is timezone
    assert value.utcoffset() == timedelta(hours=2)


def test_the_summary_tells_the_planner_these_are_values() -> None:
    from dcbrain.tfplan import language_summary

    summary = language_summary()
    assert "Decimal + str is a TypeError" in summary
    assert "datetime: date datetime time timedelta timezone" in summary
    assert isinstance(time(1), time)  # the module's own type names are plain imports here


def test_the_checker_describes_annotated_plain_functions_with_string_formats() -> None:
    def book(amount: Decimal, on: date, at: datetime, start: time, span: timedelta) -> None:
        """Book something."""

    spec = Interpreter(callables={"book": book}, isolation="inprocess").specs["book"]
    properties = spec.describe()["parameters"]["properties"]
    assert properties == {
        "amount": {"type": "string", "format": "decimal"},
        "on": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "start": {"type": "string", "format": "time"},
        "span": {"type": "string", "format": "duration"},
    }


@ISOLATIONS
def test_a_decimal_too_long_for_the_size_limit_is_refused_at_the_boundary(isolation: str) -> None:
    with pytest.raises(SizeLimitExceeded) as caught:
        Interpreter(callables={"digits": lambda: [Decimal("1" * 2000)]},
                    isolation=isolation,  # type: ignore[arg-type]
                    limits=Limits(max_size=1000)).run("digits()")
    assert "larger than 1000" in caught.value.message
