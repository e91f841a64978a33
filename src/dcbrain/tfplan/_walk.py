"""``ast.walk`` and ``ast.iter_child_nodes`` without their nested generators.

The checks and rewrites walk small plan trees many times; the standard helpers spend
most of that time in two generator layers per node. These yield the same nodes in the
same order (breadth first; a node's children are taken before the node is yielded).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

_AST = ast.AST


def iter_child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct child nodes of ``node``, in field order (as ``ast.iter_child_nodes``)."""
    children: list[ast.AST] = []
    append = children.append
    for name in node._fields:
        try:
            value = getattr(node, name)
        except AttributeError:
            continue
        if isinstance(value, _AST):
            append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, _AST):
                    append(item)
    return children


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), breadth first (as ``ast.walk``)."""
    todo = deque([node])
    popleft, append = todo.popleft, todo.append
    while todo:
        node = popleft()
        for name in node._fields:
            try:
                value = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(value, _AST):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        append(item)
        yield node
