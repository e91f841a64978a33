"""The boundary copy of short values: the same sizes, limits and refusals as any value."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.tfplan.errors import HostMemoryExceeded
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.values import CONTAINER_BYTES, PART_BYTES, sized_plan_value


@pytest.mark.parametrize("value", [0, 7, 2.5, True, None])
def test_a_scalar_costs_one_part(value: Any) -> None:
    copied, size = sized_plan_value(value, max_items=10, where="w")
    assert copied is value and size == PART_BYTES


@pytest.mark.parametrize("value", [[], {}, ()])
def test_an_empty_container_is_a_new_one_at_a_container_cost(value: Any) -> None:
    copied, size = sized_plan_value(value, max_items=10, where="w")
    assert copied == value and type(copied) is type(value)
    assert size == PART_BYTES + CONTAINER_BYTES
    if not isinstance(value, tuple):
        assert copied is not value  # a callee keeping it cannot see the plan's changes


@pytest.mark.parametrize("value", [1, [], {}])
def test_a_short_value_counts_against_max_items(value: Any) -> None:
    with pytest.raises(OverflowError, match="w: value larger than 0 elements/characters"):
        sized_plan_value(value, max_items=0, where="w")


@pytest.mark.parametrize("value", [1, None, []])
def test_a_short_value_is_refused_past_the_budget(value: Any) -> None:
    budget = HostBudget(PART_BYTES + CONTAINER_BYTES, shared=None)
    budget.charge(PART_BYTES + CONTAINER_BYTES - 1, "earlier values")
    with pytest.raises(HostMemoryExceeded, match="max_host_mb"):
        sized_plan_value(value, max_items=10, where="w", budget=budget)


def test_short_values_cost_what_the_same_values_cost_inside_a_list() -> None:
    for value in (1, 2.0, False, None, [], {}, ()):
        _, alone = sized_plan_value(value, max_items=10, where="w")
        _, inside = sized_plan_value([value], max_items=10, where="w")
        assert inside - alone == PART_BYTES + CONTAINER_BYTES  # the list's own cost
