"""What the label rewrite knows about a whole plan before it rewrites a scope.

Which names are plan variables, plan functions (and which of them are pure), names
bound by ``:=``, and which variables may share a container (linked by assignment,
flow-insensitively), so that an in-place change reaches all of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from dcbrain.tfplan.messages import without_label_keyword as without_label_keyword
from dcbrain.tfplan.methods import IN_PLACE_METHODS
from dcbrain.tfplan.parser import iter_child_nodes, walk

#: Prefix of the label rewrite's own helpers and temporaries (never a shadow's).
HELPER = "__tfh_"
#: Methods that change their receiver in place (see ``methods.IN_PLACE_METHODS``).
MUTATING_METHODS = frozenset(IN_PLACE_METHODS)
#: Temporaries the guard rewrite binds to a container and key (``t[k] op= v``).
_TEMPORARY = re.compile(r"__tf_t\d+")
_METHOD_GUARDS = frozenset({"__tf_attr", "__tf_keyed_method"})
#: Guards that call plan code or change a container: a function using them is not pure.
_HOST_GUARDS = frozenset({"__tf_parallel", "__tf_thunk", "__tf_branches", "__tf_set_slice",
                          "__construct_chain"})


def _plan_name(name: str) -> bool:
    return not name.startswith("__")


def _stored(node: ast.AST) -> list[str]:
    """Plan names bound by an assignment target (not inside subscripts)."""
    if isinstance(node, ast.Name):
        return [node.id] if _plan_name(node.id) else []
    if isinstance(node, ast.Tuple | ast.List):
        return [name for elt in node.elts for name in _stored(elt)]
    if isinstance(node, ast.Starred):
        return _stored(node.value)
    return []


def _root(node: ast.expr, aliases: Mapping[str, str] | None = None) -> str | None:
    """The variable a subscript or method receiver chain starts from (through the guard
    rewrite's temporaries, with ``aliases``)."""
    while True:
        if isinstance(node, ast.Name):
            if aliases and node.id in aliases:
                return aliases[node.id]
            return node.id if _plan_name(node.id) else None
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("__tf_attr", "__tf_slice") and node.args:
            node = node.args[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and _plan_name(node.func.id):
            return node.func.id  # ``get().append(v)``: what the function returns
        else:
            return None


class _Analysis:
    """What the rewrite needs to know about the whole plan before it rewrites a scope."""

    def __init__(self, main: ast.FunctionDef, builtins: frozenset[str]) -> None:
        self.builtins = builtins
        bindings: dict[str, int] = {}
        defs: dict[str, int] = {}
        self.walrus: set[str] = set()
        self.bound: set[str] = set()
        parent: dict[str, str] = {}

        def find(name: str) -> str:
            while parent.get(name, name) != name:
                name = parent[name]
            return name

        def link(names: Iterable[str], others: Iterable[str]) -> None:
            for left in names:
                for right in others:
                    a, b = find(left), find(right)
                    if a != b:
                        parent[a] = b

        def read(node: ast.AST) -> list[str]:
            return [child.id for child in walk(node) if isinstance(child, ast.Name)
                    and isinstance(child.ctx, ast.Load) and child.id in bindings]

        self.mutated: set[str] = set()
        nodes = list(walk(main))  # one walk for the passes below (none changes the tree)
        defined = {node.name: node for node in nodes
                   if isinstance(node, ast.FunctionDef) and node is not main}
        for node in nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del) \
                    and _plan_name(node.id):
                bindings[node.id] = bindings.get(node.id, 0) + 1
            elif isinstance(node, ast.arg) and _plan_name(node.arg):
                bindings[node.arg] = bindings.get(node.arg, 0) + 1
            elif isinstance(node, ast.FunctionDef) and node is not main:
                bindings[node.name] = bindings.get(node.name, 0) + 1
                defs[node.name] = defs.get(node.name, 0) + 1
            if isinstance(node, ast.NamedExpr) and _plan_name(node.target.id):
                self.walrus.add(node.target.id)
        #: the guard rewrite's temporaries of ``t[k] op= v``: the variable each stands for
        self.aliases: dict[str, str] = {}
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) \
                    and _TEMPORARY.fullmatch(node.targets[0].id):
                root = _root(node.value)
                if root:
                    self.aliases[node.targets[0].id] = root
        aliases = self.aliases
        for node in nodes:  # a plan function's name stands for what it returns
            if isinstance(node, ast.FunctionDef) and node is not main:
                for child in walk(node):
                    if isinstance(child, ast.Return) and child.value is not None:
                        link([node.name], read(child.value))
        for node in nodes:  # links between plan variables only, not builtins
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    roots = [_root(part, aliases) for part in _subscripts(target)]
                    link([*_stored(target), *(r for r in roots if r)], read(node.value))
                    self.mutated.update(r for r in roots if r)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
                root = _root(node.target, aliases)
                if root:
                    link([root], read(node.value))
                    self.mutated.add(root)
            elif isinstance(node, ast.Delete):
                self.mutated.update(root for target in node.targets
                                    for part in _subscripts(target)
                                    if (root := _root(part, aliases)))
            elif isinstance(node, ast.For | ast.comprehension):
                link(_stored(node.target), read(node.iter))
            elif isinstance(node, ast.Call):
                arguments = [*node.args, *(k.value for k in node.keywords)]
                if isinstance(node.func, ast.Name) and node.func.id in defined:
                    link(_parameters(defined[node.func.id]),
                         [name for arg in arguments for name in read(arg)])
                # a function passed to a builtin (map, filter, sorted, max, min) gets the
                # elements of the other arguments: its parameters may share them
                for index, arg in enumerate(arguments):
                    others = [name for other in arguments[:index] + arguments[index + 1:]
                              for name in read(other)]
                    if isinstance(arg, ast.Lambda):
                        link(_lambda_parameters(arg), others)
                    elif isinstance(arg, ast.Name) and arg.id in defined:
                        link(_parameters(defined[arg.id]), others)
                method = _method_of(node)
                if method is not None and method[1] in MUTATING_METHODS:
                    root = _root(method[0])
                    if root:
                        link([root], [name for arg in node.args for name in read(arg)])
                        self.mutated.add(root)
        self.bound = set(bindings)
        #: plan function -> the plan names it declares ``global`` or ``nonlocal``
        self.declared_by = {name: set().union(*_declared_in(node.body))
                            for name, node in defined.items()}
        self.functions = {name for name, count in defs.items()
                          if count == 1 and bindings[name] == 1}
        self.dynamic = self.walrus | (set(defs) - self.functions)
        self.pure, self.free_reads = _pure_functions(
            {name: defined[name] for name in self.functions}, builtins, self.bound)
        groups: dict[str, set[str]] = {}
        for name in self.bound:
            groups.setdefault(find(name), set()).add(name)
        mutated_roots = {find(name) for name in self.mutated}
        #: the accumulator of what in-place changes added to each variable's group
        self.group_of = {name: f"{HELPER}g_{find(name)}" for name in self.bound
                         if find(name) in mutated_roots}
        #: variables whose group a lambda or generator expression changes in place: the
        #: change runs later than the statement that holds it, so reading such a
        #: variable reads anything the run has seen by then
        late = {find(root) for node in nodes
                if isinstance(node, ast.Lambda | ast.GeneratorExp)
                for root in _changed_in_place(node, self.aliases)}
        self.changed_late = {name for name in self.bound if find(name) in late}
        #: plan function -> the variables it, or a plan function it calls, may change in
        #: place (a condition that decides whether it is called decides those too)
        self.changes_of = {name: _changed_in_place(node, self.aliases)
                           for name, node in defined.items()}
        calls = {name: {child.func.id for child in walk(node) if isinstance(child, ast.Call)
                        and isinstance(child.func, ast.Name) and child.func.id in defined}
                 for name, node in defined.items()}
        grown = True
        while grown:
            grown = False
            for name, callees in calls.items():
                for callee in callees:
                    if not self.changes_of[callee] <= self.changes_of[name]:
                        self.changes_of[name] |= self.changes_of[callee]
                        grown = True
                    if not self.declared_by[callee] <= self.declared_by[name]:
                        self.declared_by[name] |= self.declared_by[callee]
                        grown = True


def _parameters(node: ast.FunctionDef) -> list[str]:
    return [arg.arg for arg in (*node.args.posonlyargs, *node.args.args,
                                *node.args.kwonlyargs, node.args.vararg, node.args.kwarg)
            if arg is not None]


def _pure_functions(functions: dict[str, ast.FunctionDef], builtins: frozenset[str],
                    bound: set[str]) -> tuple[set[str], dict[str, set[str]]]:
    """Plan functions that can reach no host call and change nothing outside their own
    variables, and the outer variables each reads (with those of the functions it calls).

    Such a function's result depends only on its arguments and those variables, so it
    needs no labels inside: a call's label is theirs (``fib`` runs at full speed).
    """
    pure: set[str] = set()
    calls: dict[str, set[str]] = {}
    reads: dict[str, set[str]] = {}
    for name, node in functions.items():
        own = set(_parameters(node)) | {
            child.id for child in walk(node)
            if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load)}
        callees: set[str] = set()
        clean = True
        for child in walk(node):
            if child is not node and isinstance(child, ast.FunctionDef | ast.Lambda):
                clean = False
            elif isinstance(child, ast.Global | ast.Nonlocal):
                clean = clean and not any(_plan_name(n) for n in child.names)
            elif isinstance(child, ast.NamedExpr):
                clean = clean and not _plan_name(child.target.id)
            elif isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store | ast.Del):
                clean = False
            elif isinstance(child, ast.Call):
                method = _method_of(child)
                func = child.func
                if method is not None:
                    clean = clean and method[1] not in MUTATING_METHODS
                elif isinstance(func, ast.Name) and func.id in functions:
                    callees.add(func.id)
                elif not (isinstance(func, ast.Name) and (
                        (func.id in builtins and func.id not in bound)
                        or (not _plan_name(func.id) and func.id not in _HOST_GUARDS))):
                    clean = False
        if clean:
            pure.add(name)
        calls[name] = callees
        reads[name] = {child.id for child in walk(node) if isinstance(child, ast.Name)
                       and isinstance(child.ctx, ast.Load) and _plan_name(child.id)
                       and child.id not in own and child.id in bound
                       and child.id not in functions}
    changed = True
    while changed:
        changed = False
        for name in list(pure):
            if not calls[name] <= pure:
                pure.discard(name)
                changed = True
            for callee in calls[name] & pure:
                if not reads[callee] <= reads[name]:
                    reads[name] |= reads[callee]
                    changed = True
    return pure, reads


def _subscripts(target: ast.expr) -> list[ast.Subscript]:
    """The subscripts an assignment or ``del`` target stores into (``a[0], b[1] = ...``)."""
    if isinstance(target, ast.Subscript):
        return [target]
    if isinstance(target, ast.Tuple | ast.List):
        return [part for item in target.elts for part in _subscripts(item)]
    if isinstance(target, ast.Starred):
        return _subscripts(target.value)
    return []


def _lambda_parameters(node: ast.Lambda) -> list[str]:
    return [arg.arg for arg in (*node.args.posonlyargs, *node.args.args,
                                *node.args.kwonlyargs, node.args.vararg, node.args.kwarg)
            if arg is not None]


def _changed_in_place(node: ast.AST, aliases: Mapping[str, str]) -> set[str]:
    """The variables ``node`` may change in place (subscript stores, in-place methods)."""
    roots: set[str] = set()
    for child in walk(node):
        root = None
        if isinstance(child, ast.Call):
            method = _method_of(child)
            if method is not None and method[1] in MUTATING_METHODS:
                root = _root(method[0], aliases)
            elif isinstance(child.func, ast.Name) and child.func.id == "__tf_set_slice" \
                    and child.args:
                root = _root(child.args[0], aliases)
        elif isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store | ast.Del):
            root = _root(child, aliases)
        if root:
            roots.add(root)
    return roots


def changes_in_place(node: ast.AST) -> bool:
    """Whether ``node`` (a lambda's body) may change a container in place."""
    for child in walk(node):
        if isinstance(child, ast.Call):
            method = _method_of(child)
            if method is not None and method[1] in MUTATING_METHODS:
                return True
            if isinstance(child.func, ast.Name) and child.func.id == "__tf_set_slice":
                return True
    return False


def _method_of(node: ast.Call) -> tuple[ast.expr, str] | None:
    """``(receiver, method)`` of a guarded method call ``__tf_attr(x, 'm')(...)``."""
    func = node.func
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) \
            and func.func.id in _METHOD_GUARDS and len(func.args) == 2 \
            and isinstance(func.args[1], ast.Constant) and isinstance(func.args[1].value, str):
        return func.args[0], func.args[1].value
    return None


def _declared_in(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Plan names a function body declares ``global`` and ``nonlocal`` (not in nested
    functions)."""
    globals_: set[str] = set()
    nonlocals: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Global):
            globals_.update(name for name in node.names if _plan_name(name))
        elif isinstance(node, ast.Nonlocal):
            nonlocals.update(name for name in node.names if _plan_name(name))
        stack.extend(iter_child_nodes(node))
    return globals_, nonlocals


def _locals_of(body: list[ast.stmt]) -> set[str]:
    """Plan names a function body binds in its own scope (not in nested scopes)."""
    found: set[str] = set()
    stack: list[Any] = list(body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.FunctionDef:
            if _plan_name(node.name):
                found.add(node.name)
            stack.extend(node.args.defaults)
            continue
        if kind in _OWN_SCOPES:
            continue
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load and _plan_name(node.id):
                found.add(node.id)  # stored or deleted
            continue
        stack.extend(iter_child_nodes(node))
    return found


#: Nodes with a scope of their own (besides functions, whose defaults are not in theirs).
_OWN_SCOPES = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                         ast.GeneratorExp})


def _positioned(statements: list[ast.stmt], origin: ast.AST) -> list[ast.stmt]:
    for statement in statements:
        _locate_missing(statement, origin)
    return statements


def _locate_missing(node: ast.AST, origin: ast.AST) -> None:
    """Position at ``origin`` every node under ``node`` the rewrite made (the plan's own
    nodes keep theirs: errors point at them)."""
    for child in walk(node):
        if "lineno" in child._attributes and getattr(child, "lineno", None) is None:
            ast.copy_location(child, origin)


#: Builtins whose result is elements of their iterable argument (or a reordering of them).
SELECTIONS = frozenset({"max", "min", "sorted", "reversed", "list", "tuple", "iter", "next",
                        "filter"})


def _leaves(body: list[ast.stmt]) -> bool:
    """Whether ``body`` may leave its block early (not counting nested functions)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return | ast.Break | ast.Continue | ast.Raise):
            return True
        if not isinstance(node, ast.FunctionDef | ast.Lambda):
            stack.extend(iter_child_nodes(node))
    return False


def _filters(node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> bool:
    """``[x for x in xs if ...]``: a comprehension that keeps some elements as they are."""
    if not isinstance(node, ast.ListComp | ast.GeneratorExp) or len(node.generators) != 1:
        return False
    target = node.generators[0].target
    return isinstance(target, ast.Name) and isinstance(node.elt, ast.Name) \
        and node.elt.id == target.id
