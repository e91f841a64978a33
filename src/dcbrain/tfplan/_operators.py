"""Operators that can build large values or walk deep ones, routed through guards.

Binary operators and augmented assignments that can grow a value (``+``, ``*``, ``**``,
``<<``...) are checked unless an operand makes them safe (a number literal); a comparison
or membership test checks a structure before Python walks it. Where the common case is
numbers, the check is written inline (see ``_inline.py``).
"""

from __future__ import annotations

import ast

from dcbrain.tfplan._inline import (
    guard_call,
    is_int,
    is_number,
    load_name,
    located,
    numbers_inline,
    small_int_inline,
)
from dcbrain.tfplan.parser import Transformer

#: Binary operators that can build large values; the others cannot (or only with numbers).
_GUARDED_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "__tf_add", ast.Sub: "__tf_sub", ast.Mult: "__tf_mul", ast.Pow: "__tf_pow",
    ast.LShift: "__tf_lshift", ast.Mod: "__tf_mod", ast.BitOr: "__tf_bitor",
    ast.BitAnd: "__tf_bitand", ast.BitXor: "__tf_bitxor", ast.FloorDiv: "__tf_floordiv",
}
#: Operators that are safe when one operand is a number literal (the result is a number,
#: and a division by a literal is linear in the other operand).
_SAFE_WITH_NUMBER = (ast.Add, ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor, ast.FloorDiv)


def is_scalar_constant(node: ast.expr) -> bool:
    """A literal or a number: comparing or hashing it walks no structure."""
    return isinstance(node, ast.Constant) or is_number(node)


def _deep(node: ast.expr) -> ast.expr:
    """``node`` checked before Python compares it (it may expand exponentially)."""
    return node if is_scalar_constant(node) else guard_call("__tf_deep", [node], node)


class OperatorGuards(Transformer):
    """The rewriter's rules for binary operators, augmented assignments and comparisons."""

    def __init__(self) -> None:
        super().__init__()
        self._temporaries = 0
        # > 0 where checks may not bind temporaries with ``:=``: in a comprehension's
        # iterable (Python refuses it) and in a generator expression (it runs later,
        # maybe in another thread, and would share its temporaries with the enclosing
        # function)
        self._no_temporaries = 0

    # -- operators -------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        guard = _GUARDED_BINOPS.get(type(node.op))
        if guard is None:
            return node
        if isinstance(node.op, _SAFE_WITH_NUMBER) and (
            is_number(node.left) or is_number(node.right)
        ):
            return node
        if isinstance(node.op, ast.Mod) and is_number(node.left):
            return node
        if isinstance(node.op, ast.Add | ast.Sub) and not self._no_temporaries:
            return numbers_inline(node)
        if isinstance(node.op, ast.Mult) and (
            (isinstance(node.left, ast.Constant) and type(node.left.value) is float)
            or (isinstance(node.right, ast.Constant) and type(node.right.value) is float)
        ):
            return node
        if not self._no_temporaries:
            if isinstance(node.op, ast.Mod) and is_number(node.right):
                return small_int_inline(node, guard, "left", bounded=False)
            if isinstance(node.op, ast.Mult) and is_int(node.right):
                return small_int_inline(node, guard, "left", bounded=True)
            if isinstance(node.op, ast.Mult) and is_int(node.left):
                return small_int_inline(node, guard, "right", bounded=True)
        return guard_call(guard, [node.left, node.right], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt | list[ast.stmt]:
        self.generic_visit(node)
        op_name = type(node.op).__name__
        if type(node.op) not in _GUARDED_BINOPS:
            return node
        if isinstance(node.op, _SAFE_WITH_NUMBER) and is_number(node.value):
            return node
        if isinstance(node.target, ast.Name):
            if isinstance(node.op, ast.Add):
                # x += v stays a native += so CPython can append to strings in place.
                load = load_name(node.target.id, node.target)
                node.value = guard_call("__tf_check_iadd", [load, node.value], node.value)
                return node
            load = load_name(node.target.id, node.target)
            value = guard_call(f"__tf_iop_{op_name}", [load, node.value], node)
            return ast.copy_location(ast.Assign(targets=[node.target], value=value), node)
        assert isinstance(node.target, ast.Subscript)  # attributes cannot be assigned
        # d[k] op= v  ->  t1 = d; t2 = k; t1[t2] = guard(t1[t2], v)  (each evaluated once)
        container, key = self._temporary(), self._temporary()
        prelude = [
            ast.Assign(targets=[ast.Name(id=container, ctx=ast.Store())],
                       value=node.target.value),
            ast.Assign(targets=[ast.Name(id=key, ctx=ast.Store())], value=node.target.slice),
        ]
        current = ast.Subscript(value=load_name(container, node), slice=load_name(key, node),
                                ctx=ast.Load())
        value = guard_call(f"__tf_iop_{op_name}", [current, node.value], node)
        store = ast.Subscript(value=load_name(container, node), slice=load_name(key, node),
                              ctx=ast.Store())
        update = ast.Assign(targets=[store], value=value)
        operands = (node.target.value, node.target.slice, node.value)
        return [located(ast.copy_location(stmt, node), node, *operands)
                for stmt in (*prelude, update)]

    def _temporary(self) -> str:
        self._temporaries += 1
        return f"__tf_t{self._temporaries}"

    def visit_Compare(self, node: ast.Compare) -> ast.Compare:
        self.generic_visit(node)
        if all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            return node
        operands = [node.left, *node.comparators]
        if len(operands) == 2 and any(is_scalar_constant(part) for part in operands):
            return node  # comparing with a literal never walks a structure
        node.left = _deep(node.left)
        node.comparators = [
            guard_call("__tf_in", [part], part) if isinstance(op, ast.In | ast.NotIn)
            else _deep(part)
            for op, part in zip(node.ops, node.comparators, strict=True)
        ]
        return node
