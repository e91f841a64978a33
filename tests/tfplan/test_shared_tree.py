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


def test_listing_calls_validates_the_plan_once_for_the_interpreter() -> None:
    from dcbrain.tfplan.interpreter import compile_source
    from dcbrain.tfplan.parser import shared_plan

    source = "x = lookup(order_id='A-2')\nreturn x  # shared plan test"
    assert [call.name for call in plan_calls(source, ["lookup"])] == ["lookup"]
    plan = shared_plan(source)
    assert plan.children is not None  # validated, its nodes listed
    parsed, _ = compile_source(source, frozenset({"lookup"}))
    assert parsed is plan


def test_calls_of_a_plan_the_validator_refuses_are_still_listed() -> None:
    import pytest

    from dcbrain.tfplan.errors import TFSyntaxError
    from dcbrain.tfplan.parser import shared_plan

    source = "import os\ntry:\n    x = lookup(order_id='A-3')\nexcept Exception:\n    x = 1"
    with pytest.raises(TFSyntaxError):
        shared_plan(source)
    calls = plan_calls(source, ["lookup"])
    assert [(call.name, call.kwargs, call.line) for call in calls] == [
        ("lookup", {"order_id": "'A-3'"}, 3)]
    with pytest.raises(TFSyntaxError):  # a refusal is not kept: raised again, anew
        shared_plan(source)
    assert plan_calls("x = (", ["lookup"]) == []


def test_a_parsed_plan_lists_its_nodes_once_in_walk_order() -> None:
    import ast

    from dcbrain.tfplan.parser import Plan, walk

    source = "def f(a):\n    return [b * a for b in range(a)]\nreturn f(x=2) if 1 else {'k': 3}"
    plan = parse(source)
    nodes = plan.nodes()
    assert nodes == list(ast.walk(plan.tree)) == list(walk(plan.tree))
    assert plan.nodes() is nodes  # every reader reads the one listing
    unlisted = Plan(source=source, tree=ast.parse(source))  # a tree the parser did not list
    assert unlisted.nodes() == list(ast.walk(unlisted.tree))
    assert unlisted.nodes() is not unlisted.nodes()
    assert plan.children is not None
    assert all(plan.children[node] == list(ast.iter_child_nodes(node)) for node in nodes)
