"""Fields a plan reads from results that cannot hold them (part of the static check).

A call's result has the shape its chain or tool declares (``returns``, see
:mod:`~dcbrain.tfplan.shapes`), and so has a name bound to it once and never changed in
place, an item of it (``for e in emails``, ``emails[0]``, a comprehension's variable), a
field of it (``r["items"]``, ``r.get("items")``), and what ``sorted``, ``reversed``,
``list``, ``filter``, ``min`` and ``max`` give back. Reading a field a closed record does
not have (``e["sender_name"]`` of an ``Email``), or a field of a list, is a problem at the
field's position. Anything the analysis cannot follow has no shape and is never a problem.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from dcbrain.tfplan.parser import iter_child_nodes, walk
from dcbrain.tfplan.shapes import Shape

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Methods that change their object in place (a record may then hold other keys).
_MUTATING = frozenset({"append", "extend", "insert", "update", "setdefault", "pop",
                       "popitem", "clear", "remove", "sort", "reverse"})
#: Builtins whose result holds the items of their (first) iterable argument.
_SAME_ITEMS = frozenset({"sorted", "reversed", "list", "tuple"})
_ONE_ITEM = frozenset({"min", "max"})
_COMPREHENSION_KINDS = frozenset(_COMPREHENSIONS)
#: Node types :meth:`_FieldCheck._collect` reads.
_COLLECTED = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr,
                        ast.FunctionDef, ast.Lambda, ast.alias, ast.Global, ast.Nonlocal,
                        ast.Delete, ast.Call})
#: Node types with no field read in them: names, constants, contexts, operators.
_NO_FIELD_READS = frozenset({ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, *(
    kind for base in (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
    for kind in base.__subclasses__())})


class _Spec(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def returns(self) -> dict[str, Any] | None: ...


def field_problems(tree: ast.Module, specs: Mapping[str, _Spec],
                   nodes: Sequence[ast.AST] | None = None,
                   child_nodes: Callable[[ast.AST], Sequence[ast.AST]] = iter_child_nodes
                   ) -> list[tuple[ast.AST, str]]:
    """``(node, message)`` for every field read that no value of its shape has; ``nodes``
    are those of ``walk(tree)`` when the caller has them already, ``child_nodes`` lists a
    node's child nodes (e.g. :meth:`Plan.child_nodes`)."""
    if all(Shape.of(spec.returns) is None for spec in specs.values()):
        return []  # every shape starts at a call's declared result: none here
    return _FieldCheck(tree, specs, nodes, child_nodes).run()


class _FieldCheck:
    def __init__(self, tree: ast.Module, specs: Mapping[str, _Spec],
                 nodes: Sequence[ast.AST] | None = None,
                 child_nodes: Callable[[ast.AST], Sequence[ast.AST]] = iter_child_nodes
                 ) -> None:
        self.tree = tree
        self._child_nodes = child_nodes
        self.specs = specs
        self.problems: list[tuple[ast.AST, str]] = []
        self.bindings: dict[str, list[ast.AST]] = {}
        self.changed: set[str] = set()
        self.plan_functions: set[str] = set()
        self._mutated: list[ast.AST] = []
        self._memo: dict[str, tuple[Shape, str] | None] = {}
        self._busy: set[str] = set()
        self._collect(list(walk(tree)) if nodes is None else nodes)

    # -- what each name is bound to ----------------------------------------------------
    def _collect(self, nodes: Sequence[Any]) -> None:
        calls: list[ast.Call] = []
        for node in nodes:
            kind = type(node)
            if kind not in _COLLECTED:
                continue
            if kind is ast.Assign:
                for target in node.targets:
                    self._bind_target(target, node)
            elif kind is ast.AugAssign or kind is ast.AnnAssign or kind is ast.For:
                self._bind_target(node.target, node)
            elif kind is ast.NamedExpr:
                self._bind(node.target.id, node)
            elif kind is ast.FunctionDef or kind is ast.Lambda:
                if kind is ast.FunctionDef:
                    self._bind(node.name, node)
                    self.plan_functions.add(node.name)
                arguments = node.args
                for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            arguments.vararg, arguments.kwarg):
                    if arg is not None:
                        self._bind(arg.arg, node)
            elif kind is ast.alias:
                self._bind((node.asname or node.name).partition(".")[0], node)
            elif kind is ast.Global or kind is ast.Nonlocal:
                self.changed.update(node.names)
            elif kind is ast.Delete:
                self._mutated.extend(node.targets)
            else:  # a call
                calls.append(node)
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in _MUTATING:
                    self._mutated.append(func.value)
        # a value handed to a plan function may be changed there
        for node in calls if self.plan_functions else ():
            if isinstance(node.func, ast.Name) and node.func.id in self.plan_functions:
                self._mutated.extend([*node.args, *(keyword.value for keyword in node.keywords)])
        for node in self._mutated:  # once every binding is known, for aliases
            self._changes(node)

    def _bind_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, node)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._bind_target(element.value if isinstance(element, ast.Starred)
                                  else element, node)
        elif isinstance(target, ast.Subscript | ast.Attribute | ast.Starred):
            self._mutated.append(target)

    def _bind(self, name: str, node: ast.AST) -> None:
        self.bindings.setdefault(name, []).append(node)

    def _changes(self, node: ast.AST) -> None:
        """The name under ``node`` (``x`` of ``x[0]["k"]``) may now hold other fields."""
        while isinstance(node, ast.Subscript | ast.Attribute | ast.Starred):
            node = node.value
        if isinstance(node, ast.Name) and node.id not in self.changed:
            self.changed.add(node.id)
            for binding in self.bindings.get(node.id, []):
                value = getattr(binding, "value", None)
                if isinstance(binding, ast.Assign) and isinstance(value, ast.Name | ast.Subscript):
                    self._changes(value)  # an alias: the value it names changes too

    def _name_shape(self, name: str) -> tuple[Shape, str] | None:
        if name in self._memo:
            return self._memo[name]
        if name in self._busy or name in self.changed:
            return None
        bound = self.bindings.get(name, [])
        shape = None
        if len(bound) == 1:
            self._busy.add(name)
            try:
                shape = self._binding_shape(name, bound[0])
            finally:
                self._busy.discard(name)
        self._memo[name] = shape
        return shape

    def _binding_shape(self, name: str, node: ast.AST) -> tuple[Shape, str] | None:
        env: dict[str, tuple[Shape, str] | None] = {}
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                return self.shape(node.value, env)
            if isinstance(target, ast.Tuple | ast.List) and _is_call_of(node.value, "parallel"):
                call = node.value
                assert isinstance(call, ast.Call)
                if any(isinstance(arg, ast.Starred) for arg in call.args) or \
                        any(isinstance(element, ast.Starred) for element in target.elts):
                    return None
                for element, argument in zip(target.elts, call.args, strict=False):
                    if isinstance(element, ast.Name) and element.id == name:
                        return self.shape(argument, env)
            return None
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            return _items(self.shape(node.iter, env))
        return None

    # -- the shape of an expression ----------------------------------------------------
    def shape(self, node: ast.AST, env: Mapping[str, tuple[Shape, str] | None]
              ) -> tuple[Shape, str] | None:
        if isinstance(node, ast.Name):
            return env[node.id] if node.id in env else self._name_shape(node.id)
        if isinstance(node, ast.Subscript):
            base = self.shape(node.value, env)
            if base is None:
                return None
            key = node.slice
            if isinstance(key, ast.Slice):
                return base if base[0].is_list else None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return _field(base, key.value)
            if base[0].is_list:
                return _items(base)
            values = base[0].items()  # a dict[str, X] read with a key computed at run time
            return (values, base[1]) if values is not None else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and node.args \
                    and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                base = self.shape(func.value, env)
                return _field(base, node.args[0].value) if base is not None else None
            if not isinstance(func, ast.Name) or func.id in env or func.id in self.bindings:
                return None
            spec = self.specs.get(func.id)
            if spec is not None:
                shape = Shape.of(spec.returns)
                return (shape, f"{spec.kind} {func.id!r}") if shape is not None else None
            if func.id in _SAME_ITEMS and len(node.args) == 1:
                found = self.shape(node.args[0], env)
                return found if found is not None and found[0].is_list else None
            if func.id == "filter" and len(node.args) == 2:
                found = self.shape(node.args[1], env)
                return found if found is not None and found[0].is_list else None
            if func.id in _ONE_ITEM and len(node.args) == 1:
                return _items(self.shape(node.args[0], env))
        return None

    # -- the walk ----------------------------------------------------------------------
    def run(self) -> list[tuple[ast.AST, str]]:
        self._visit(self.tree, {})
        return self.problems

    def _visit(self, node: Any, env: dict[str, tuple[Shape, str] | None]) -> None:
        kind = type(node)
        if kind in _COMPREHENSION_KINDS:
            inner = dict(env)
            for generator in node.generators:
                self._visit(generator.iter, inner)
                items = _items(self.shape(generator.iter, inner))
                for name in _names(generator.target):
                    inner[name] = items if isinstance(generator.target, ast.Name) else None
                for condition in generator.ifs:
                    self._visit(condition, inner)
            elements = [node.key, node.value] if kind is ast.DictComp else [node.elt]
            for element in elements:
                self._visit(element, inner)
            return
        if kind is ast.FunctionDef or kind is ast.Lambda:
            inner = dict(env)
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                        arguments.vararg, arguments.kwarg):
                if arg is not None:
                    inner[arg.arg] = None
            env = inner
        elif kind is ast.Subscript:
            key = node.slice
            if type(node.ctx) is ast.Load and type(key) is ast.Constant \
                    and isinstance(key.value, str):
                self._check(node.value, key.value, key, env)
        elif kind is ast.Call and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            self._check(node.func.value, node.args[0].value, node.args[0], env)
        for child in self._child_nodes(node):
            if type(child) not in _NO_FIELD_READS:
                self._visit(child, env)

    def _check(self, base_node: ast.AST, key: str, at: ast.AST,
               env: Mapping[str, tuple[Shape, str] | None]) -> None:
        found = self.shape(base_node, env)
        if found is None:
            return
        shape, origin = found
        if shape.is_list:
            self.problems.append((at, f"{origin} returns a list ({shape.text()}): take an "
                                      f"item (a loop, [0]) before reading its field {key!r}"))
            return
        fields = shape.fields()
        if fields is None or key in fields:
            return
        close = difflib.get_close_matches(key, list(fields), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        title = shape.schema.get("title")
        record = shape.name or (title if isinstance(title, str) and title else "the record")
        self.problems.append((at, f"{record} from {origin} has no field {key!r}{hint} "
                                  f"(its fields: {', '.join(list(fields)[:30])})"))


def _field(found: tuple[Shape, str], key: str) -> tuple[Shape, str] | None:
    shape, origin = found
    if shape.is_list:
        return None
    sub = shape.field(key)
    return (sub, origin) if sub is not None else None


def _items(found: tuple[Shape, str] | None) -> tuple[Shape, str] | None:
    """The items of a list (iterating a dict gives its keys, which have no shape)."""
    if found is None or not found[0].is_list:
        return None
    items = found[0].items()
    return (items, found[1]) if items is not None else None


def _names(target: ast.AST) -> Iterator[str]:
    for node in walk(target):
        if isinstance(node, ast.Name):
            yield node.id


def _is_call_of(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == name
