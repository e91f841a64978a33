"""Checks the rewriter writes inline, as expressions, where a guard call would cost more.

Each binds the checked value to a temporary with ``:=`` and tests its type: the common
case (a number, a scalar key, an int operand) then runs as plain bytecode, anything else
goes to the guard. The rewriter never uses them where ``:=`` is refused or unsafe.
"""

from __future__ import annotations

import ast
from typing import Any, TypeVar

from dcbrain.tfplan.parser import iter_child_nodes

Node = TypeVar("Node", bound=ast.AST)

SUM = "__tf_sum"
OPERAND = "__tf_operand"
FIELD = "__tf_field"
KEY = "__tf_k"
TEXT = "__tf_text"
#: An f-string at most this long is neither size-checked nor charged beyond the loop that
#: builds it: a loop step then allocates about as much as one building a small tuple.
SHORT_TEXT = 64


def located(new: Node, source: ast.AST, *operands: ast.AST) -> Node:
    """``new`` with every node the rewriter made for it positioned at ``source``.

    The ``operands`` (subtrees already rewritten) are not walked again, so wrapping every
    level of a nested expression costs time linear in its size.
    """
    skipped = {id(operand) for operand in operands}
    stack: list[ast.AST] = [new]
    while stack:
        node = stack.pop()
        if id(node) in skipped:
            continue
        if "lineno" in node._attributes and getattr(node, "lineno", None) is None:
            ast.copy_location(node, source)
        stack.extend(iter_child_nodes(node))
    return new


def load_name(identifier: str, node: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=identifier, ctx=ast.Load()), node)


def guard_call(func: str, args: list[ast.expr], node: ast.AST) -> ast.Call:
    call = ast.Call(func=load_name(func, node), args=args, keywords=[])
    return ast.copy_location(call, node)


def is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def numbers_inline(node: ast.BinOp) -> ast.expr:
    """``a + b`` -> ``v if (v := a + b).__class__ in __tf_numbers else __tf_checked(v)``:
    numbers (the common case) are never checked, and no guard function is called for
    them. The result is built before it is checked, which is safe: ``+`` and ``-`` make
    at most twice the size of their operands."""
    stored = ast.NamedExpr(target=ast.Name(id=SUM, ctx=ast.Store()), value=node)
    kind = ast.Attribute(value=stored, attr="__class__", ctx=ast.Load())
    test = ast.Compare(left=kind, ops=[ast.In()], comparators=[load_name("__tf_numbers", node)])
    inline = ast.IfExp(test=test, body=load_name(SUM, node),
                       orelse=guard_call("__tf_checked", [load_name(SUM, node)], node))
    return located(ast.copy_location(inline, node), node, node.left, node.right)


def checked_inline(node: ast.expr, temporary: str, kinds: str, guard: str) -> ast.expr:
    """``node`` -> ``t if (t := node).__class__ in kinds else guard(t)``."""
    stored = ast.NamedExpr(target=ast.Name(id=temporary, ctx=ast.Store()), value=node)
    test = ast.Compare(left=ast.Attribute(value=stored, attr="__class__", ctx=ast.Load()),
                       ops=[ast.In()], comparators=[load_name(kinds, node)])
    inline = ast.IfExp(test=test, body=load_name(temporary, node),
                       orelse=guard_call(guard, [load_name(temporary, node)], node))
    return located(ast.copy_location(inline, node), node, node)


def small_int_inline(node: ast.BinOp, guard: str, side: str, bounded: bool) -> ast.expr:
    """``x % 7`` -> ``t % 7 if (t := x).__class__ is __tf_int else __tf_mod(t, 7)``, and
    ``x * 3`` alike with ``-2**64 < t < 2**64`` added to the test: the other operand is a
    number literal, so an int (a small one, for ``*``) needs no guard and no call."""
    operand: ast.expr = getattr(node, side)
    stored = ast.NamedExpr(target=ast.Name(id=OPERAND, ctx=ast.Store()), value=operand)
    test: ast.expr = ast.Compare(
        left=ast.Attribute(value=stored, attr="__class__", ctx=ast.Load()),
        ops=[ast.Is()], comparators=[load_name("__tf_int", node)])
    if bounded:
        small = ast.Compare(
            left=ast.UnaryOp(op=ast.USub(), operand=load_name("__tf_small", node)),
            ops=[ast.Lt(), ast.Lt()],
            comparators=[load_name(OPERAND, node), load_name("__tf_small", node)])
        test = ast.BoolOp(op=ast.And(), values=[test, small])
    setattr(node, side, load_name(OPERAND, node))
    other = node.right if side == "left" else node.left
    checked = load_name(OPERAND, node)
    operands = [checked, other] if side == "left" else [other, checked]
    inline = ast.IfExp(test=test, body=node, orelse=guard_call(guard, operands, node))
    return located(ast.copy_location(inline, node), node, operand, other)


def is_int(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def target_shape(target: ast.expr) -> Any:
    """How an assignment target consumes its value (see ``Budget.unpack``); ``None`` when
    it binds items as they are, without starred names or slices."""
    if isinstance(target, ast.Starred):
        return "*"
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
        return "[:]"
    if isinstance(target, ast.Tuple | ast.List):
        parts = tuple(target_shape(elt) for elt in target.elts)
        if any(part is not None for part in parts):
            return parts
    return None


def constant(value: Any, node: ast.AST) -> ast.Constant:
    return ast.copy_location(ast.Constant(value=value), node)


def iteration(target: ast.expr, iterable: ast.expr) -> ast.expr:
    """The iterable of a loop or comprehension: unpacked item by item when ``target`` has
    a starred name or a slice."""
    consumed = target_shape(target)
    if consumed is None:
        return guard_call("__tf_iter", [iterable], iterable)
    return guard_call("__tf_iter_unpack", [iterable, constant(consumed, iterable)], iterable)
