"""``ast.NodeTransformer`` with the same results at a fraction of its per-node cost.

The rewriters visit every node of a plan once per compile. ``ast.NodeTransformer`` looks
up each node's method by building its name and calling ``getattr``, walks the fields
through a generator, and visits every context and operator node (``Load``, ``Add``), each
a call that gives the node back unchanged. :class:`Transformer` finds a method once per
node type, walks the fields in a plain loop, and leaves out the nodes whose visit cannot
change anything: those of a type without a method of its own and without child nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, ClassVar

#: Node types that never hold other nodes (or only such ones, as a name its context):
#: visiting one without a method of its own gives it back unchanged.
_CHILDLESS: tuple[type[ast.AST], ...] = (
    ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
)
_LEAVES: tuple[type[ast.AST], ...] = (ast.Constant, ast.alias, ast.Pass, ast.Break,
                                      ast.Continue, ast.Global, ast.Nonlocal)
#: Methods ``ast.NodeVisitor.visit_Constant`` still calls when a subclass has them.
_DEPRECATED = ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant",
               "visit_Ellipsis")

_Method = Callable[[Any, Any], Any]


def _concrete(kind: type[ast.AST]) -> list[type[ast.AST]]:
    found: list[type[ast.AST]] = []
    for sub in kind.__subclasses__():
        found += [sub, *_concrete(sub)]
    return found


class Transformer(ast.NodeTransformer):
    """A node transformer whose ``visit`` and ``generic_visit`` behave as the standard
    library's (the same methods called in the same order, the same trees made)."""

    _methods: ClassVar[dict[type, _Method]] = {}
    _unchanged: ClassVar[frozenset[type]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}
        candidates = [*_LEAVES]
        for kind in _CHILDLESS:
            candidates += _concrete(kind)
        unchanged = {kind for kind in candidates
                     if cls._method(kind) is Transformer.generic_visit}
        if cls._method(ast.Name) is Transformer.generic_visit \
                and unchanged.issuperset(_concrete(ast.expr_context)):
            unchanged.add(ast.Name)  # its one child node is its context
        cls._unchanged = frozenset(unchanged)

    @classmethod
    def _method(cls, kind: type) -> _Method:
        method = getattr(cls, "visit_" + kind.__name__, None)
        if method is None:
            return Transformer.generic_visit
        if method is ast.NodeVisitor.visit_Constant and \
                not any(hasattr(cls, name) for name in _DEPRECATED):
            return Transformer.generic_visit
        return method  # type: ignore[no-any-return]

    def visit(self, node: ast.AST) -> Any:
        kind = type(node)
        method = self._methods.get(kind)
        if method is None:
            method = self._methods[kind] = self._method(kind)
        return method(self, node)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        unchanged = self._unchanged
        for name in node._fields:
            try:
                old = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(old, list):
                values: list[Any] = []
                for value in old:
                    if isinstance(value, ast.AST) and type(value) not in unchanged:
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, ast.AST):
                            values.extend(value)
                            continue
                    values.append(value)
                old[:] = values
            elif isinstance(old, ast.AST) and type(old) not in unchanged:
                new = self.visit(old)
                if new is None:
                    delattr(node, name)
                else:
                    setattr(node, name, new)
        return node
