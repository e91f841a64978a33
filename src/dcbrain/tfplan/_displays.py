"""Displays (``[...]``, ``(...)``, ``{...}``) charged like every other construction.

CPython folds a display of constants into one constant and rebuilds the container from it
each time the display runs (``{0, 1, ..., 255}`` is a frozenset constant and a
``BUILD_SET``), so one short line inside a loop can build gigabytes while the loop pays one
operation per step. A display is charged by its *weight*, one operation per element on
every evaluation (two for a set's, whose table takes about 64 bytes per element): its own
elements plus those of the small displays nested in it, which are not charged on their
own. A list or tuple display of fewer than ``CHARGED_WEIGHT``
elements pays no guard call (it builds no more than a loop step that builds a short
tuple); a set or dict display pays from its first element, since its table takes
hundreds of bytes even then. A tuple of constants is one shared constant, never built
again, and costs nothing.
"""

from __future__ import annotations

import ast

from dcbrain.tfplan._inline import constant, guard_call
from dcbrain.tfplan.parser import Transformer

#: List and tuple displays of fewer elements (nested small displays included) are not
#: charged; set and dict displays are, from ``HASHED_WEIGHT``.
CHARGED_WEIGHT = 8
HASHED_WEIGHT = 1


class DisplayCharges(Transformer):
    """The rewriter's rules for list, tuple, set and dict displays."""

    def __init__(self) -> None:
        #: weights of the displays left unwrapped so far, counted again by their parent
        self._display_weights: dict[int, int] = {}

    def visit_List(self, node: ast.List) -> ast.expr:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return self.charged_display(node, self.display_weight(node.elts))

    def visit_Tuple(self, node: ast.Tuple) -> ast.expr:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or _constant_tuple(node):
            return node
        return self.charged_display(node, self.display_weight(node.elts))

    def display_weight(self, elements: list[ast.expr], *more: list[ast.expr | None]) -> int:
        """Weight of a visited display of ``elements`` (a dict's keys), whose ``more``
        parts (a dict's values) add only the displays nested in them."""
        weights = self._display_weights
        groups: tuple[list[ast.expr] | list[ast.expr | None], ...] = (elements, *more)
        nested = sum(weights.get(id(part), 0) for parts in groups for part in parts)
        return len(elements) + nested

    def charged_display(self, node: ast.expr, weight: int, smallest: int = CHARGED_WEIGHT,
                        per_element: int = 1) -> ast.expr:
        """``node`` (a visited display of ``weight`` elements), charged from ``smallest``
        elements on, ``per_element`` operations for each."""
        if weight < smallest:
            self._display_weights[id(node)] = weight
            return node
        return guard_call("__tf_display", [node, constant(weight * per_element, node)], node)


def _constant_tuple(node: ast.Tuple) -> bool:
    return all(isinstance(elt, ast.Constant)
               or (isinstance(elt, ast.Tuple) and _constant_tuple(elt)) for elt in node.elts)
