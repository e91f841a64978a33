"""``dumps`` writes what ``json.dumps`` writes of the plain data, with its options too."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dcbrain.values.jsonsafe import dumps, plain

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                    st.text(alphabet=st.characters(codec=None)), st.just(math.nan),
                    st.just("\ud800"))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_dumps_is_json_dumps_of_the_plain_data(value: Any) -> None:
    text = dumps(value)
    assert text == json.dumps(plain(value), ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")
    assert json.loads(text) == json.loads(json.dumps(plain(value)))


def test_dumps_options_still_apply() -> None:
    assert dumps([10 ** 5000]) == json.dumps([hex(10 ** 5000)])
    value = {"b": [1, 2], "a": "é"}
    assert dumps(value) == '{"b": [1, 2], "a": "é"}'
    assert dumps(value, compact=True) == '{"b":[1,2],"a":"é"}'
    assert dumps(value, sort_keys=True) == '{"a": "é", "b": [1, 2]}'
    assert dumps(value, indent=1) == '{\n "b": [\n  1,\n  2\n ],\n "a": "é"\n}'
