"""The rewriter's own parts and the parser's listing of child nodes: its node
transformer, the statements it builds without parsing them, and the passes that read the
listed tree, each the same as what the standard library's way makes."""

from __future__ import annotations

import ast
import copy
from typing import Any

import pytest

from dcbrain.tfplan.checker import BUILTIN_NAMES, check
from dcbrain.tfplan.labels.exprs import copied
from dcbrain.tfplan.labels.hoist import _statements
from dcbrain.tfplan.parser import (
    MAX_LISTED_NODES,
    Plan,
    Transformer,
    child_lister,
    iter_child_nodes,
    parse,
    syntax_tree,
    walk,
    walk_listed,
)
from dcbrain.tfplan.rewrite import call_counters, function_counters, module_globals, plan_tree

PLANS = [
    "x = 1\n",
    "def f(a, *b, c=2, **d):\n    return [a, b, c, d]\nprint(f(1))\n",
    "import math as m\nfrom json import dumps\ny = {k: m.sqrt(v) for k, v in {'a': 4}.items()}\n",
    "items = [i * 3 % 7 for i in range(10) if i]\nfor a, *rest in [[1, 2, 3]]:\n    del a\n",
    "t = f'{1!r:>{4}} {\"x\"}'\nwhile False:\n    pass\ns = {1, *[2]}\nq = (lambda z: z)(1)\n",
    "n = 0\nn += 2\nn: int = 3\nglobal g\n"
    "if n > 1 and not n == 2:\n    n = -n\nelse:\n    n ^= 1\n",
]


def dumped(nodes: list[Any]) -> list[str]:
    return [ast.dump(node, include_attributes=True) for node in nodes]


class Standard(ast.NodeTransformer):
    """The standard library's transformer with the rules below."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=node.id.upper(), ctx=node.ctx), node)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None  # removed

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, int):
            node.value += 1
        return node

    def visit_Expr(self, node: ast.Expr) -> list[ast.stmt]:
        self.generic_visit(node)
        return [node, ast.copy_location(ast.Pass(), node)]  # one statement becomes two

    def visit_Add(self, node: ast.Add) -> ast.AST:
        return ast.Sub()


class Fast(Transformer, Standard):
    """The same rules on :class:`Transformer`."""


class FastWithoutRules(Transformer):
    pass


@pytest.mark.parametrize("source", PLANS)
def test_the_transformer_makes_the_trees_the_standard_one_makes(source: str) -> None:
    expected = Standard().visit(syntax_tree(source))
    assert ast.dump(Fast().visit(syntax_tree(source)), include_attributes=True) == \
        ast.dump(expected, include_attributes=True)
    unchanged = FastWithoutRules().visit(syntax_tree(source))
    assert ast.dump(unchanged, include_attributes=True) == \
        ast.dump(syntax_tree(source), include_attributes=True)


def test_the_transformer_skips_only_nodes_no_method_changes() -> None:
    assert ast.Load in FastWithoutRules._unchanged and ast.Name in FastWithoutRules._unchanged
    assert ast.Add not in Fast._unchanged and ast.Name not in Fast._unchanged
    assert ast.Constant not in Fast._unchanged and ast.Pass not in Fast._unchanged
    assert ast.Sub in Fast._unchanged


def test_the_counters_are_the_statements_parsed_from_their_text() -> None:
    parsed = syntax_tree("__tf_depth = __tf_calls = 0\n__tf_count_calls(lambda: __tf_calls)")
    assert dumped(call_counters()) == dumped(parsed.body)


def test_a_functions_counters_are_the_parsed_statements_at_its_position() -> None:
    function = syntax_tree("x = 1\n\n    \ndef f(a):\n    return a\n").body[1]
    prologue = syntax_tree(
        "nonlocal __tf_depth, __tf_calls\n__tf_depth += 1\n__tf_calls += 1\n"
        "if __tf_depth > __tf_max_depth or __tf_calls > __tf_max_calls:\n"
        "    __tf_too_deep(__tf_depth)").body
    epilogue = syntax_tree("__tf_depth -= 1").body
    for statement in (*prologue, *epilogue):
        for child in walk(statement):
            ast.copy_location(child, function)
    built = function_counters(function)
    assert dumped(built[0]) == dumped(prologue)
    assert dumped(built[1]) == dumped(epilogue)


@pytest.mark.parametrize("source", PLANS)
def test_every_node_of_a_rewritten_plan_has_a_position(source: str) -> None:
    tree = plan_tree(source, BUILTIN_NAMES)
    missing = [node for node in walk(tree)
               if "lineno" in node._attributes and getattr(node, "lineno", None) is None]
    assert missing == []
    compile(tree, "<tf_plan>", "exec")  # no position to fill in first


@pytest.mark.parametrize("source", PLANS)
def test_the_parser_lists_every_nodes_children_as_iter_child_nodes(source: str) -> None:
    plan = parse(source)
    assert plan.children is not None
    assert [id(node) for node in plan.nodes()] == [id(node) for node in walk(plan.tree)]
    child_nodes = plan.child_nodes()
    for node in walk(plan.tree):
        assert child_nodes(node) == iter_child_nodes(node)
    assert {id(node) for node in plan.children} == {id(node) for node in plan.nodes()}


def test_a_tree_the_parser_did_not_list_is_walked_as_it_is() -> None:
    tree = syntax_tree(PLANS[1])
    assert child_lister(None) is iter_child_nodes
    assert walk_listed(tree, None) == list(walk(tree))
    listed = {node: iter_child_nodes(node) for node in walk(tree)}
    assert walk_listed(tree, listed) == list(walk(tree))


@pytest.mark.parametrize("source", PLANS)
def test_module_globals_read_from_the_listed_tree_are_those_of_a_fresh_one(source: str) -> None:
    plan = parse(source)
    for provided in (frozenset(), BUILTIN_NAMES):
        assert module_globals(plan.tree, provided, plan.child_nodes()) == \
            module_globals(syntax_tree(source), provided)


@pytest.mark.parametrize("source", PLANS)
def test_a_copied_tree_is_what_deepcopy_makes(source: str) -> None:
    tree = syntax_tree(source)
    shared = ast.Name(id="twice", ctx=ast.Load())
    tree.body.append(ast.Expr(value=ast.Tuple(elts=[shared, shared], ctx=ast.Load())))
    copy_ = copied(tree)
    assert ast.dump(copy_, include_attributes=True) == \
        ast.dump(copy.deepcopy(tree), include_attributes=True)
    originals = {id(node) for node in walk(tree)}
    assert not originals & {id(node) for node in walk(copy_)}  # nothing shared with it
    pair = copy_.body[-1].value.elts  # type: ignore[attr-defined]
    assert pair[0] is pair[1]  # found twice, copied once (as deepcopy)


@pytest.mark.parametrize("source", PLANS)
def test_labelled_statements_are_found_at_any_depth(source: str) -> None:
    tree = plan_tree(source, BUILTIN_NAMES, tracking="strict", builtins=BUILTIN_NAMES)
    statements = [node for node in walk(tree) if isinstance(node, ast.stmt)]
    assert sorted(map(id, _statements(tree.body))) == sorted(map(id, statements))


def test_a_large_plan_keeps_no_listing_and_is_checked_the_same() -> None:
    source = "".join(f"x{i} = [{i}, {i} + 1]\n" for i in range(MAX_LISTED_NODES // 4))
    plan = parse(source)
    assert len(plan.nodes()) > MAX_LISTED_NODES and plan.children is None
    assert plan.nodes() == list(walk(plan.tree))
    assert check(plan) == check(Plan(source, syntax_tree(source))) == []
    bad = source + "y = x0.nope + undefined_name\n"
    assert check(parse(bad)) == check(Plan(bad, syntax_tree(bad))) != []
