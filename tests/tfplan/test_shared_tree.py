"""A plan's source is parsed once for the readers that only read its tree."""

from __future__ import annotations

from dcbrain.brain.plan_diff import plan_calls
from dcbrain.tfplan.parser import parse, shared_tree


def test_shared_parse_reuses_the_tree_plan_calls_read() -> None:
    source = "x = lookup(order_id='A-1')\nreturn x  # shared tree test"
    calls = plan_calls(source, ["lookup"])
    assert [(call.name, call.kwargs) for call in calls] == [("lookup", {"order_id": "'A-1'"})]
    assert parse(source, shared=True).tree is shared_tree(source)
    assert parse(source).tree is not shared_tree(source)  # a caller's own tree by default
    assert plan_calls(source, ["lookup"]) == calls
    assert plan_calls(source, ["other"]) == []
