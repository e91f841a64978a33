"""Label expressions under construction: the code that computes a value's label."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

TRACKER = "__tfl"


@dataclass
class _Label:
    """A label expression under construction: static bits and parts evaluated at run time."""

    bits: int = 0
    parts: list[ast.expr] = field(default_factory=list)

    def __or__(self, other: _Label) -> _Label:
        return _Label(self.bits | other.bits, [*self.parts, *other.parts])

    def add(self, other: _Label) -> None:
        self.bits |= other.bits
        self.parts.extend(other.parts)

    def expr(self) -> ast.expr:
        if not self.parts:
            return ast.Constant(value=self.bits)
        parts = self.parts if len(self.parts) == 1 \
            else list({ast.dump(part): part for part in self.parts}.values())
        result = parts[0]
        for part in parts[1:]:
            result = ast.BinOp(left=result, op=ast.BitOr(), right=part)
        if self.bits:
            result = ast.BinOp(left=result, op=ast.BitOr(), right=ast.Constant(value=self.bits))
        return result


def _union(labels: Iterable[_Label]) -> _Label:
    total = _Label()
    for label in labels:
        total.add(label)
    return total


def _special(node: ast.expr, precise: bool) -> bool:
    """Whether :meth:`LabelRewriter.label` treats ``node`` as more than its parts' union."""
    return isinstance(node, ast.Constant | ast.Name | ast.Call | ast.Lambda | ast.ListComp
                      | ast.SetComp | ast.GeneratorExp | ast.DictComp) or (
        precise and isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice))


def _name(identifier: str) -> ast.Name:
    return ast.Name(id=identifier, ctx=ast.Load())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_name(func), args=list(args), keywords=[])


def _seen() -> _Label:
    return _Label(0, [ast.Attribute(value=_name(TRACKER), attr="seen", ctx=ast.Load())])


def _flat(label: _Label) -> _Label:
    if len(label.parts) == 1 and not label.bits:
        return _Label(0, [_call("__tfh_flat", label.parts[0])])
    return label  # a union of two or more parts is an int already


def _element(label: _Label) -> _Label:
    """The label of one element of a value of ``label`` (records keep their fields)."""
    if len(label.parts) == 1 and not label.bits:
        return _Label(0, [_call("__tfh_elem", label.parts[0])])
    return label  # a union of two or more parts is an int already


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


_Node = TypeVar("_Node", bound=ast.AST)
#: Values ``copy.deepcopy`` gives back as they are.
_ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None), type(Ellipsis)})


def copied(node: _Node) -> _Node:
    """``copy.deepcopy(node)`` for a syntax tree, at a fraction of its cost: every node
    copied once (a node found twice is copied once and found twice in the copy)."""
    return _copy(node, {})  # type: ignore[no-any-return]


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind in _ATOMIC:
        return value
    found = memo.get(id(value))
    if found is not None:
        return found
    if isinstance(value, ast.AST):
        new = memo[id(value)] = kind()
        new.__dict__.update({key: _copy(item, memo) for key, item in value.__dict__.items()})
        return new
    if kind is list:
        new_list: list[Any] = []
        memo[id(value)] = new_list
        new_list.extend(_copy(item, memo) for item in value)
        return new_list
    return copy.deepcopy(value)
