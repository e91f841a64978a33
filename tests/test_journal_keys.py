"""Journal keys: a canonical encoding of a call's arguments, one text per plan value."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbrain.journal import MAX_ARGS_CHARS, JournalKey, canonical_args


def typed(value: Any) -> Any:
    """The reference: a hashable form that tells plan values apart by type and value."""
    kind = type(value)
    if kind is float:
        return ("float", repr(value))  # nan equals nan; 0.0 and -0.0 differ
    if kind in (list, tuple):
        return (kind.__name__, tuple(typed(item) for item in value))
    if kind in (set, frozenset):
        return (kind.__name__, frozenset(typed(item) for item in value))
    if kind is dict:
        return ("dict", frozenset((typed(key), typed(item)) for key, item in value.items()))
    if kind in (Decimal, date, datetime, time, timedelta):
        # a Decimal by its digits (1.0 and 1.00 differ), a datetime by its offset too
        return (kind.__name__, str(value))
    return (kind.__name__, value)


SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**3000)
           | st.floats() | st.text(st.characters(exclude_categories=()), max_size=8)
           | st.sampled_from(["nan", "inf", "1", "1.0", "True", "None", "$tuple", "$dict"])
           | st.binary(max_size=4)
           | st.decimals(allow_nan=False, places=2, min_value=-1000, max_value=1000)
           | st.sampled_from([Decimal("1.0"), Decimal("1.00"), Decimal("-0"), Decimal("NaN")])
           | st.dates() | st.datetimes() | st.times() | st.timedeltas()
           | st.datetimes(timezones=st.sampled_from([UTC,
                                                     timezone(timedelta(hours=-5))])))
KEYS = SCALARS.filter(lambda v: not isinstance(v, float) or not math.isnan(v)) | st.tuples(
    st.integers(), st.text(max_size=3))
VALUES = st.recursive(
    SCALARS,
    lambda inner: (st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
                   | st.dictionaries(KEYS, inner, max_size=4)
                   | st.frozensets(KEYS, max_size=4) | st.sets(KEYS, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=120, deadline=None)
@given(VALUES, VALUES)
def test_two_values_get_the_same_text_exactly_when_they_are_the_same_value(
    a: Any, b: Any
) -> None:
    assert (canonical_args(a) == canonical_args(b)) == (typed(a) == typed(b))


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_dict_order_does_not_matter(arguments: dict[Any, Any]) -> None:
    reordered = dict(reversed(list(arguments.items())))
    assert canonical_args(reordered) == canonical_args(arguments)


@settings(max_examples=50, deadline=None)
@given(VALUES)
def test_the_text_is_short_utf8_json(value: Any) -> None:
    text = canonical_args(value)
    text.encode()  # storable as UTF-8, even for a lone surrogate
    assert len(text) <= MAX_ARGS_CHARS
    if not text.startswith("sha256:"):
        json.loads(text)


@pytest.mark.parametrize("a, b", [
    (math.nan, "nan"), (math.inf, "inf"), (1, 1.0), (1, True), (1, "1"), (0.0, -0.0),
    ((1, 2), [1, 2]), ({1: "a"}, {"1": "a"}), ({(1,): 0}, {"(1,)": 0}),
    ({"$tuple": [1, 2]}, (1, 2)), ({"$float": "nan"}, math.nan), (None, "None"),
    ("\ud800", "\ufffd"), ({1, 2}, frozenset({1, 2})), (b"ab", "ab"),
    (10**5000, 10**5000 + 1),
    ("x" * 100_000 + "a", "x" * 100_000 + "b"),
], ids=lambda value: type(value).__name__)
def test_values_an_earlier_encoding_confused_get_different_texts(a: Any, b: Any) -> None:
    assert canonical_args({"value": a}) != canonical_args({"value": b})


def test_structures_that_differ_only_deep_down_get_different_texts() -> None:
    a: Any = 0
    b: Any = 1
    for _ in range(300):
        a, b = [a], {"k": b}
    assert canonical_args(a) != canonical_args([[0]]) and canonical_args(a) != canonical_args(b)
    a2: Any = 0
    for _ in range(300):
        a2 = [a2]
    assert canonical_args(a) == canonical_args(a2)


def test_common_arguments_read_as_plain_json() -> None:
    assert canonical_args({"order_id": "A1", "amount": 39.9, "tags": ["x"], "n": None}) == \
        '{"amount":39.9,"n":null,"order_id":"A1","tags":["x"]}'


def test_arguments_that_contain_themselves_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contain themselves"):
        canonical_args({"value": loop})


def test_a_failed_try_has_a_key_of_its_own_and_the_call_keeps_its_own() -> None:
    call = JournalKey(2, "1.0", "refund", '{"order_id":"A1"}', 0)
    tries = [call.failed(number) for number in (1, 2)]
    assert call.text == '2|1.0|refund|{"order_id":"A1"}|0'  # as before retries existed
    assert [key.text for key in tries] == [call.text + "|try=1", call.text + "|try=2"]
    assert all(JournalKey.from_dict(key.to_dict()) == key for key in [call, *tries])
    assert "failed_try" not in call.to_dict()  # stored keys of calls are unchanged
    assert {key.call for key in tries} == {call.call}  # the same call, never reused: failed



FLAT_VALUES: list[Any] = [
    "A-17", "", "café", "line\nbreak \"quoted\" \\", "\ud800 lone surrogate", 0, -1, 2**64,
    2**4000, True, False, None, 1.5, -0.0, math.nan, math.inf, Decimal("1.00"),
    date(2024, 1, 2), datetime(2024, 1, 2, 3, 4, tzinfo=UTC), b"\x00bytes", "x" * 2000,
]


def general_key(arguments: Any) -> str:
    """The key the general (nested) encoding gives ``arguments``."""
    import hashlib

    from dcbrain.journal import _canonical

    text = _canonical(arguments)
    return text if len(text) <= MAX_ARGS_CHARS else \
        "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("value", FLAT_VALUES, ids=lambda value: type(value).__name__)
def test_a_flat_call_is_keyed_as_the_general_encoding_keys_it(value: Any) -> None:
    for arguments in ({"x": value}, {"b": value, "a": 1, "$c": 2}, {"z": value, "\ud800": 1},
                      {2: value}, {"x": value, "y": [value]}, {}):
        assert canonical_args(arguments) == general_key(arguments), arguments
    assert canonical_args({"b": value, "a": "A"}) == canonical_args({"a": "A", "b": value})


@given(st.dictionaries(st.text(max_size=5), st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8),
    st.binary(max_size=4)), max_size=5))
@settings(max_examples=200, deadline=None)
def test_flat_arguments_of_any_scalars_key_as_the_general_encoding(
        arguments: dict[str, Any]) -> None:
    assert canonical_args(arguments) == general_key(arguments)
