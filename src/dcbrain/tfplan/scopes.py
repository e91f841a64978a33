"""Name resolution of a plan, scope by scope, as Python resolves names.

A plan's top level is a module scope; every function, lambda and comprehension has a
scope of its own. A name read in a scope resolves to a binding of that scope, of an
enclosing function scope, of the module, or to a builtin; ``global`` and ``nonlocal``
redirect it as in Python. The checker uses this to report names bound nowhere the read
can see (a name bound only inside a function is not visible at top level).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dcbrain.tfplan.parser import iter_child_nodes

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Node types that bind, declare or open a scope (besides names).
_SCOPING = frozenset({ast.NamedExpr, ast.Global, ast.Nonlocal, ast.alias, ast.FunctionDef,
                      ast.Lambda, *_COMPREHENSIONS})
#: Node types without names in them: contexts, operators, constants, bare statements.
_UNBOUND = frozenset({ast.Constant, ast.Pass, ast.Break, ast.Continue, *(
    kind for base in (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
    for kind in base.__subclasses__())})


@dataclass
class Scope:
    """One scope: the names bound in it and the names it declares global or nonlocal."""

    kind: str  # "module", "function" or "comprehension"
    parent: Scope | None = None
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def binding_scope(self) -> Scope:
        """Where a walrus in this scope binds: comprehensions bind in their enclosing scope."""
        scope = self
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass
class Resolution:
    """The scopes of a plan and every name read in it, with the scope it is read in."""

    module: Scope
    reads: list[tuple[ast.Name, Scope]]

    def binds(self, name: str, scope: Scope) -> bool:
        """Whether ``name`` read in ``scope`` resolves to a binding the plan makes."""
        current: Scope | None = scope
        while current is not None and current.kind != "module":
            if name in current.globals:
                break
            if name in current.bound and name not in current.nonlocals:
                return True
            current = current.parent
        return name in self.module.bound


def resolve(tree: ast.Module,
            child_nodes: Callable[[ast.AST], Sequence[ast.AST]] = iter_child_nodes
            ) -> Resolution:
    """Scopes and reads of ``tree``, in one pass over it (``child_nodes`` lists a node's
    child nodes, e.g. :meth:`Plan.child_nodes`)."""
    module = Scope("module")
    reads: list[tuple[ast.Name, Scope]] = []
    binds: list[tuple[Scope, str]] = []  # settled once every global declaration is known
    stack: list[tuple[Any, Scope]] = [(tree, module)]  # (node, the scope it is in)
    pop, push = stack.pop, stack.append
    while stack:
        node, scope = pop()
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is ast.Load:
                reads.append((node, scope))
            else:
                binds.append((scope, node.id))
            continue
        if kind in _SCOPING:
            if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                binds.append((scope.binding_scope(), node.target.id))
                stack.append((node.value, scope))
                continue
            if isinstance(node, ast.Global):
                scope.globals.update(node.names)
                continue
            if isinstance(node, ast.Nonlocal):
                scope.nonlocals.update(node.names)
                continue
            if isinstance(node, ast.alias):
                binds.append((scope, (node.asname or node.name).partition(".")[0]))
                continue
            if isinstance(node, ast.FunctionDef | ast.Lambda):
                if isinstance(node, ast.FunctionDef):
                    binds.append((scope, node.name))
                inner = Scope("function", scope)
                arguments = node.args
                for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            arguments.vararg, arguments.kwarg):
                    if arg is not None:
                        inner.bound.add(arg.arg)
                defaults = [*arguments.defaults, *filter(None, arguments.kw_defaults)]
                stack.extend((default, scope) for default in defaults)
                body = node.body if isinstance(node, ast.FunctionDef) else [node.body]
                stack.extend((statement, inner) for statement in body)
                continue
            if isinstance(node, _COMPREHENSIONS):
                inner = Scope("comprehension", scope)
                first, *rest = node.generators
                stack.append((first.iter, scope))  # evaluated in the enclosing scope
                stack.append((first.target, inner))
                stack.extend((part, inner) for part in first.ifs)
                for generator in rest:
                    stack.extend((part, inner) for part in (generator.target, generator.iter,
                                                            *generator.ifs))
                elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                stack.extend((element, inner) for element in elements)
                continue
        for child in child_nodes(node):
            if type(child) not in _UNBOUND:  # nothing to resolve in it
                push((child, scope))
    for scope, name in binds:
        (module if name in scope.globals else scope).bound.add(name)
    return Resolution(module, reads)
