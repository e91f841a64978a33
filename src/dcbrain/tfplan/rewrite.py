"""Rewrite a validated plan into guarded Python and compile it.

The plan's statements become the body of one function, ``__tf_main``, so that a
top-level ``return`` ends the plan with its value. Names still resolve as in a Python
module: builtins live in the run's ``__builtins__``, and every top-level name where the
difference shows (one that shadows a builtin, or that a function uses) is declared
``global`` in ``__tf_main``, so a plan variable shadows a builtin from its assignment on
and ``del`` uncovers it again (see :func:`module_globals`).

Every construct that could reach the host or grow without bound is routed through a
guard (see ``guards/``); everything else runs as CPython bytecode, which is what makes
the sandbox fast; where a guard would be called for the common case (numbers, scalar
keys), the check is written inline instead (see ``_inline.py``). Positions are copied
from the original nodes, so errors point at the plan's own lines and columns.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Sequence
from types import CodeType
from typing import Any, TypedDict

from dcbrain.tfplan._displays import HASHED_WEIGHT, DisplayCharges
from dcbrain.tfplan._inline import (
    FIELD,
    KEY,
    SHORT_TEXT,
    TEXT,
    checked_inline,
    constant,
    guard_call,
    iteration,
    load_name,
    located,
    target_shape,
)
from dcbrain.tfplan._operators import OperatorGuards, is_scalar_constant
from dcbrain.tfplan.labels.hoist import hoist_label_updates
from dcbrain.tfplan.labels.provenance import Tracking
from dcbrain.tfplan.labels.rewrite import LabelRewriter
from dcbrain.tfplan.methods import KEYED_METHODS
from dcbrain.tfplan.parser import (
    MAIN_FUNCTION,
    PLAN_FILENAME,
    SYNTAX_TREE_LOCK,
    iter_child_nodes,
    syntax_tree,
    walk,
)

_RESULT = "__tf_value"
_DEPTH = "__tf_depth"
_CALLS = "__tf_calls"

#: f-strings with more fields than this are joined by a guard that sizes them first; up to
#: this many, CPython joins them (each field is bounded by the size limit, so is the sum).
FSTRING_NATIVE_FIELDS = 8


def compile_plan(source: str, provided: frozenset[str] = frozenset(), *,
                 tracking: Tracking = "off", builtins: frozenset[str] = frozenset(),
                 bound: list[str] | None = None) -> CodeType:
    """Compile the source of a validated plan whose run provides the names ``provided``
    (builtins, registered callables); raises ``SyntaxError`` for compiler-level errors.

    The source is parsed again for the rewrite: that costs a fraction of copying the
    plan's tree, which stays as it was parsed. With ``tracking`` other than ``"off"``
    the guarded plan also keeps the labels of its values (see ``_label_rewrite.py``, and
    ``_label_hoist.py`` for the label updates moved out of loops; ``builtins`` are the
    names among ``provided`` that are not chains or tools). ``bound``: the plan's
    :func:`module_globals`, when the caller has them from its own tree of ``source``.
    """
    tree = plan_tree(source, provided, tracking=tracking, builtins=builtins, bound=bound)
    if tracking == "off":
        return _compiled_module(tree)
    try:
        return _compiled_module(tree)
    except SyntaxError:
        # what the compiler refuses in the plan itself, as the plan's own error
        compile_plan(source, provided)
        raise


def plan_tree(source: str, provided: frozenset[str] = frozenset(), *,
              tracking: Tracking = "off", builtins: frozenset[str] = frozenset(),
              bound: list[str] | None = None) -> ast.Module:
    """The guarded tree :func:`compile_plan` compiles for ``source`` (arguments as there)."""
    rewritten = _Rewriter(provided, bound).rewrite(syntax_tree(source))
    if tracking == "off":
        return rewritten
    labelled = LabelRewriter(provided, builtins, tracking == "strict").rewrite(rewritten)
    return hoist_label_updates(labelled)


def _compiled_module(rewritten: ast.Module) -> CodeType:
    try:
        code = _compile_tree(rewritten)
    except TypeError:  # a node the rewriter made without a position: costs a walk more
        code = _compile_tree(ast.fix_missing_locations(rewritten))
    return _as_module_code(code)


def _compile_tree(tree: ast.Module) -> CodeType:
    with SYNTAX_TREE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a plan's SyntaxWarnings must not reach host stderr
        return compile(tree, PLAN_FILENAME, "exec")


_MAIN_PREFIX = MAIN_FUNCTION + ".<locals>."
#: Where the rewriter's own statements of an empty plan are.
_ORIGIN = ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)


def _as_module_code(code: CodeType) -> CodeType:
    """``code`` with the plan's functions named as at module level (``f``, not
    ``__tf_main.<locals>.f``): Python's own error messages name them that way."""
    consts = tuple(_as_module_code(const) if isinstance(const, CodeType) else const
                   for const in code.co_consts)
    qualname = code.co_qualname.removeprefix(_MAIN_PREFIX)
    return code.replace(co_consts=consts, co_qualname=qualname)


_NESTED_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                  ast.GeneratorExp)
_NESTED_KINDS = frozenset(_NESTED_SCOPES)
_NOWHERE = 1 << 62


def module_globals(tree: ast.Module, provided: frozenset[str] = frozenset(),
                   child_nodes: Callable[[ast.AST], Sequence[ast.AST]] = iter_child_nodes
                   ) -> list[str]:
    """Top-level names of a plan that must live in the run's globals, not in fast locals.

    Python can tell the difference only for a name that shadows a builtin or registered
    callable (``provided``: an earlier use must still reach it, ``del`` uncovers it), a
    name a nested scope (function, lambda, comprehension) mentions, and a name a function
    declares ``global``. Every other top-level name stays a fast local of ``__tf_main``,
    which keeps top-level loops fast. ``child_nodes`` lists a node's child nodes (e.g.
    :meth:`~dcbrain.tfplan.parser.Plan.child_nodes`).
    """
    top: dict[str, None] = {}
    nested: set[str] = set()
    declared: dict[str, None] = {}
    # depth first, in source order: a stack of nodes, the nested ones marked by a second
    stack: list[ast.AST] = list(reversed(tree.body))
    inner_from = _NOWHERE  # stack entries at and above this index are in a nested scope
    marks: list[int] = []  # earlier values of inner_from, restored as the stack shrinks
    while stack:
        node: Any = stack.pop()
        while marks and len(stack) < inner_from:
            inner_from = marks.pop()
        inner = len(stack) >= inner_from
        kind = type(node)
        if kind is ast.Name or kind is ast.alias or kind is ast.FunctionDef:
            name = node.id if kind is ast.Name else node.name \
                if kind is ast.FunctionDef else (node.asname or node.name)
            if inner:
                nested.add(name)
            elif kind is not ast.Name or type(node.ctx) is not ast.Load:
                top[name] = None
        elif kind is ast.Global:
            declared.update(dict.fromkeys(node.names))
        elif kind is ast.Nonlocal:
            nested.update(node.names)
        children = child_nodes(node)
        if not children:
            continue
        if not inner and kind in _NESTED_KINDS:
            marks.append(inner_from)
            inner_from = len(stack)
        stack.extend(reversed(children))
    chosen = {name: None for name in top if name in nested or name in provided}
    chosen.update(declared)
    return list(chosen)


def call_counters() -> list[ast.stmt]:
    """The statements ``__tf_main`` starts with, as parsed from the lines
    ``__tf_depth = __tf_calls = 0`` and ``__tf_count_calls(lambda: __tf_calls)`` (built, not
    parsed: a parse per plan costs more than the nodes)."""
    store, load = ast.Store(), ast.Load()
    depth_end = len(_DEPTH)
    calls_at = depth_end + 3
    zero_at = calls_at + len(_CALLS) + 3
    counted = ast.Assign(
        targets=[ast.Name(id=_DEPTH, ctx=store, **_span(1, 0, depth_end)),
                 ast.Name(id=_CALLS, ctx=store, **_span(1, calls_at, calls_at + len(_CALLS)))],
        value=ast.Constant(value=0, **_span(1, zero_at, zero_at + 1)),
        **_span(1, 0, zero_at + 1))
    counter = "__tf_count_calls"
    lambda_at = len(counter) + 1
    body_at = lambda_at + len("lambda: ")
    end = body_at + len(_CALLS)
    call = ast.Call(
        func=ast.Name(id=counter, ctx=load, **_span(2, 0, len(counter))),
        args=[ast.Lambda(args=_no_arguments(),
                         body=ast.Name(id=_CALLS, ctx=load, **_span(2, body_at, end)),
                         **_span(2, lambda_at, end))],
        keywords=[], **_span(2, 0, end + 1))
    return [counted, ast.Expr(value=call, **_span(2, 0, end + 1))]


def function_counters(node: ast.AST) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """What a plan function's body starts and ends with, every node positioned at ``node``:
    ``nonlocal __tf_depth, __tf_calls``, ``__tf_depth += 1``, ``__tf_calls += 1``,
    ``if __tf_depth > __tf_max_depth or __tf_calls > __tf_max_calls: __tf_too_deep(__tf_depth)``,
    and ``__tf_depth -= 1``."""
    at = positions(node)
    store, load = ast.Store(), ast.Load()

    def name(identifier: str, ctx: ast.expr_context) -> ast.Name:
        return ast.Name(id=identifier, ctx=ctx, **at)

    def counted(identifier: str, op: ast.operator) -> ast.AugAssign:
        return ast.AugAssign(target=name(identifier, store), op=op,
                             value=ast.Constant(value=1, **at), **at)

    def over(identifier: str, limit: str) -> ast.Compare:
        return ast.Compare(left=name(identifier, load), ops=[ast.Gt()],
                           comparators=[name(limit, load)], **at)

    too_deep = ast.Call(func=name("__tf_too_deep", load), args=[name(_DEPTH, load)],
                        keywords=[], **at)
    check = ast.If(
        test=ast.BoolOp(op=ast.Or(), values=[over(_DEPTH, "__tf_max_depth"),
                                             over(_CALLS, "__tf_max_calls")], **at),
        body=[ast.Expr(value=too_deep, **at)], orelse=[], **at)
    prologue: list[ast.stmt] = [ast.Nonlocal(names=[_DEPTH, _CALLS], **at),
                                counted(_DEPTH, ast.Add()), counted(_CALLS, ast.Add()), check]
    return prologue, [counted(_DEPTH, ast.Sub())]


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def positions(node: ast.AST) -> dict[str, Any]:
    """The positions ``ast.copy_location`` copies from ``node``, as keyword arguments."""
    found: dict[str, Any] = {}
    for name in _POSITIONS:
        value = getattr(node, name, None)
        if value is not None or (name.startswith("end_") and hasattr(node, name)):
            found[name] = value
    return found


class _Span(TypedDict):
    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int


def _span(line: int, start: int, end: int) -> _Span:
    return {"lineno": line, "col_offset": start, "end_lineno": line, "end_col_offset": end}


def _no_arguments() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])


def _module(name: str, node: ast.AST) -> ast.expr:
    """The helper module ``name`` as bound for every run, whatever the plan rebinds."""
    return ast.copy_location(
        ast.Subscript(value=load_name("__tf_modules", node), slice=constant(name, node),
                      ctx=ast.Load()), node)


def _key(node: ast.expr) -> ast.expr:
    """``node`` checked before Python hashes it as a dict key or set element."""
    return node if is_scalar_constant(node) else guard_call("__tf_key", [node], node)


class _Rewriter(OperatorGuards, DisplayCharges):
    def __init__(self, provided: frozenset[str], bound: list[str] | None = None) -> None:
        super().__init__()
        self._provided = provided
        self._bound = bound
        self._function_depth = 0

    def rewrite(self, tree: ast.Module) -> ast.Module:
        """``tree`` as the guarded module; every node made for it is positioned."""
        body: list[ast.stmt] = []
        first = tree.body[0] if tree.body else _ORIGIN
        bound = module_globals(tree, self._provided) if self._bound is None else self._bound
        if bound:
            body.append(ast.copy_location(ast.Global(names=bound), first))
        for statement in tree.body:
            if isinstance(statement, ast.Expr):
                value = self.visit(statement.value)
                target = ast.Name(id=_RESULT, ctx=ast.Store())
                assign = ast.Assign(targets=[target], value=value)
                body.append(located(ast.copy_location(assign, statement), statement, value))
            else:
                visited = self.visit(statement)
                body.extend(visited if isinstance(visited, list) else [visited])
        at = positions(first)  # of the statements made for the plan as a whole
        start = ast.Assign(targets=[ast.Name(id=_RESULT, ctx=ast.Store(), **at)],
                           value=ast.Constant(value=None, **at), **at)
        finish = ast.Return(value=ast.Tuple(
            elts=[ast.Constant(value=False, **at), ast.Name(id=_RESULT, ctx=ast.Load(), **at)],
            ctx=ast.Load(), **at), **at)
        main = ast.FunctionDef(
            name=MAIN_FUNCTION, args=_no_arguments(),
            body=[start, *call_counters(), *body, finish], decorator_list=[],
        )
        main.lineno, main.col_offset = 1, 0
        return ast.Module(body=[main], type_ignores=[])

    # -- functions -------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1
        node.returns = None
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            arg.annotation = None
        for special in (node.args.vararg, node.args.kwarg):
            if special is not None:
                special.annotation = None
        # depth and calls counted in cells of __tf_main (no call, no global store):
        # calls stay cheap; one guard call only when a limit is crossed
        prologue, epilogue = function_counters(node)
        guarded = ast.Try(body=node.body, handlers=[], orelse=[], finalbody=epilogue)
        node.body = [*prologue, ast.copy_location(guarded, node)]
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1
        # lambda: e  ->  lambda: __tf_tick() and e  (each call is one operation)
        tick = guard_call("__tf_tick", [], node.body)
        node.body = ast.copy_location(ast.BoolOp(op=ast.And(), values=[tick, node.body]),
                                      node.body)
        return node

    def visit_Return(self, node: ast.Return) -> ast.Return:
        self.generic_visit(node)
        if self._function_depth == 0:
            value = node.value or constant(None, node)
            node.value = ast.copy_location(
                ast.Tuple(elts=[constant(True, node), value], ctx=ast.Load()), node)
        return node

    def visit_Import(self, node: ast.Import) -> list[ast.stmt]:
        """``import math as m`` -> ``m = <math>``: the module every run has, bound under
        the name Python would bind (also when the plan had rebound ``math`` before)."""
        return [
            ast.copy_location(ast.Assign(
                targets=[ast.copy_location(ast.Name(id=alias.asname or alias.name,
                                                    ctx=ast.Store()), node)],
                value=_module(alias.name, node)), node)
            for alias in node.names
        ]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> list[ast.stmt]:
        """``from math import sqrt as root`` -> ``root = <math>.sqrt`` (checked members)."""
        assert node.module is not None  # the parser admits only math and json
        assigns: list[ast.stmt] = []
        for alias in node.names:
            member = ast.Attribute(value=_module(node.module, node), attr=alias.name,
                                   ctx=ast.Load())
            target = ast.copy_location(ast.Name(id=alias.asname or alias.name, ctx=ast.Store()),
                                       node)
            assign = ast.Assign(targets=[target],
                                value=self.visit(ast.copy_location(member, node)))
            assigns.append(ast.copy_location(assign, node))
        return assigns

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.Assign(targets=[node.target], value=node.value)
        return self.visit(ast.copy_location(assign, node))  # type: ignore[no-any-return]

    # -- assignments and loops -------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        self.generic_visit(node)
        if len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
                bounds = [part or constant(None, target)
                          for part in (target.slice.lower, target.slice.upper,
                                       target.slice.step)]
                call = guard_call("__tf_set_slice", [target.value, *bounds, node.value], node)
                return ast.copy_location(ast.Expr(value=call), node)
        shapes = [target_shape(target) for target in node.targets]
        shape = next((shape for shape in shapes if shape is not None), None)
        if shape is not None:
            if len(node.targets) > 1 and any(other not in (None, shape) for other in shapes):
                shape = "[:]" if isinstance(shape, str) else tuple(None for _ in shape)
            node.value = guard_call("__tf_unpack", [node.value, constant(shape, node)], node.value)
        return node

    def visit_For(self, node: ast.For) -> ast.For:
        self.generic_visit(node)
        node.iter = iteration(node.target, node.iter)
        return node

    def _key(self, node: ast.expr) -> ast.expr:
        """``node`` checked before Python hashes it; a scalar without a call."""
        if self._no_temporaries or is_scalar_constant(node):
            return _key(node)
        return checked_inline(node, KEY, "__tf_flat", "__tf_key")

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.GeneratorExp:
        self._no_temporaries += 1
        self.generic_visit(node)
        self._no_temporaries -= 1
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        node.target = self.visit(node.target)
        self._no_temporaries += 1  # Python refuses assignment expressions here
        node.iter = self.visit(node.iter)
        self._no_temporaries -= 1
        node.ifs = [self.visit(condition) for condition in node.ifs]
        node.iter = iteration(node.target, node.iter)
        return node

    def visit_While(self, node: ast.While) -> ast.While:
        self.generic_visit(node)
        tick = ast.copy_location(ast.Expr(value=guard_call("__tf_tick", [], node)), node)
        node.body = [tick, *node.body]
        return node

    # -- comparing and hashing -------------------------------------------------------
    def visit_Dict(self, node: ast.Dict) -> ast.expr:
        self.generic_visit(node)
        weight = self.display_weight(node.values, node.keys)
        node.keys = [None if key is None else self._key(key) for key in node.keys]
        node.values = [
            guard_call("__tf_star", [value], value) if key is None else value
            for key, value in zip(node.keys, node.values, strict=True)
        ]
        return self.charged_display(node, weight, HASHED_WEIGHT)

    def visit_Set(self, node: ast.Set) -> ast.expr:
        self.generic_visit(node)
        weight = self.display_weight(node.elts)
        for elt in node.elts:
            if isinstance(elt, ast.Starred):  # its items are hashed: __tf_star -> hashed
                assert isinstance(elt.value, ast.Call) and isinstance(elt.value.func, ast.Name)
                elt.value.func.id = "__tf_hashed_star"
        node.elts = [elt if isinstance(elt, ast.Starred) else self._key(elt) for elt in node.elts]
        return self.charged_display(node, weight, HASHED_WEIGHT, per_element=2)

    def visit_SetComp(self, node: ast.SetComp) -> ast.SetComp:
        self.generic_visit(node)
        node.elt = self._key(node.elt)
        return node

    def visit_DictComp(self, node: ast.DictComp) -> ast.DictComp:
        self.generic_visit(node)
        node.key = self._key(node.key)
        return node

    # -- access ----------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        self.generic_visit(node)
        attribute = ast.copy_location(ast.Constant(value=node.attr), node)
        return guard_call("__tf_attr", [node.value, attribute], node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.slice, ast.Slice):
            if isinstance(node.ctx, ast.Load):
                bounds = [part or constant(None, node)
                          for part in (node.slice.lower, node.slice.upper, node.slice.step)]
                return guard_call("__tf_slice", [node.value, *bounds], node)
            return node
        node.slice = self._key(node.slice)
        return node

    def visit_Starred(self, node: ast.Starred) -> ast.Starred:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            node.value = guard_call("__tf_star", [node.value], node.value)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.expr:
        self.generic_visit(node)
        fields = [part for part in node.values if isinstance(part, ast.FormattedValue)]
        if len(fields) > FSTRING_NATIVE_FIELDS:  # sized before the pieces are joined
            parts = [part.value if isinstance(part, ast.FormattedValue) else part
                     for part in node.values]
            return guard_call("__tf_fjoin", parts, node)
        if not fields:
            return node
        if self._no_temporaries:
            return guard_call("__tf_checked", [node], node)  # f"{s}{s}" must not double freely
        # a short result (the common case) needs neither the check nor a call
        stored = ast.NamedExpr(target=ast.Name(id=TEXT, ctx=ast.Store()), value=node)
        test = ast.Compare(left=guard_call("__tf_len", [stored], node), ops=[ast.LtE()],
                           comparators=[ast.Constant(value=SHORT_TEXT)])
        inline = ast.IfExp(test=test, body=load_name(TEXT, node),
                           orelse=guard_call("__tf_checked", [load_name(TEXT, node)], node))
        return located(ast.copy_location(inline, node), node, node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.FormattedValue:
        self.generic_visit(node)
        spec: ast.expr = node.format_spec or constant("", node)
        conversion = constant(node.conversion, node)
        if node.conversion == -1 and node.format_spec is None and not self._no_temporaries:
            # {x}: a str, int, float or bool is formatted natively without a call
            value = node.value
            stored = ast.NamedExpr(target=ast.Name(id=FIELD, ctx=ast.Store()), value=value)
            test = ast.Compare(
                left=ast.Attribute(value=stored, attr="__class__", ctx=ast.Load()),
                ops=[ast.In()], comparators=[load_name("__tf_native", value)])
            rendered = guard_call("__tf_fv", [load_name(FIELD, value), conversion, spec], value)
            inline = ast.IfExp(test=test, body=load_name(FIELD, value), orelse=rendered)
            node.value = located(ast.copy_location(inline, value), value, value, spec)
            return node
        node.value = located(guard_call("__tf_fv", [node.value, conversion, spec], node.value),
                             node.value, node.value, spec)
        node.conversion = -1
        node.format_spec = None
        return node

    # -- calls -----------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        for keyword in node.keywords:
            if keyword.arg is None:
                keyword.value = guard_call("__tf_star", [keyword.value], keyword.value)
        if isinstance(node.func, ast.Name) and node.func.id == "parallel" and not node.keywords:
            node.func = load_name("__tf_parallel", node.func)
            node.args = [self._thunk(arg) for arg in node.args]
        func = node.func
        if (isinstance(func, ast.Call) and isinstance(func.func, ast.Name)
                and func.func.id == "__tf_attr" and isinstance(func.args[1], ast.Constant)
                and func.args[1].value in KEYED_METHODS and node.args
                and not isinstance(node.args[0], ast.Starred)):
            # d.get(k): the key is checked here, so the method needs no wrapper
            func.func.id = "__tf_keyed_method"
            node.args[0] = self._key(node.args[0])
        return node

    def _thunk(self, arg: ast.expr) -> ast.expr:
        """``e`` -> ``__tf_thunk(lambda: e)``; ``*[e for x in xs]`` -> one thunk per item,
        at most ``max_branches`` of them (``__tf_branches``)."""
        if isinstance(arg, ast.Starred):
            inner = arg.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
                    and inner.func.id == "__tf_star" and inner.args:
                inner = inner.args[0]
            if isinstance(inner, ast.ListComp | ast.GeneratorExp):
                names = _bound_names(inner.generators)
                params = ast.arguments(
                    posonlyargs=[], args=[ast.copy_location(ast.arg(arg=name), inner)
                                          for name in names], kwonlyargs=[],
                    kw_defaults=[], defaults=[])
                function = ast.copy_location(ast.Lambda(args=params, body=inner.elt), inner)
                bound = [load_name(name, inner) for name in names]
                thunk = guard_call("__tf_thunk", [function, *bound], inner.elt)
                # taken one by one up to max_branches: never a list of more thunks
                listing = guard_call("__tf_branches", [ast.copy_location(
                    ast.GeneratorExp(elt=thunk, generators=inner.generators), inner)], inner)
                return ast.copy_location(ast.Starred(value=listing, ctx=ast.Load()), arg)
            return arg
        function = ast.copy_location(
            ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                          kw_defaults=[], defaults=[]), body=arg), arg)
        return guard_call("__tf_thunk", [function], arg)


def _bound_names(generators: list[ast.comprehension]) -> list[str]:
    names: list[str] = []
    for generator in generators:
        for node in walk(generator.target):
            if isinstance(node, ast.Name) and node.id not in names:
                names.append(node.id)
    return names
