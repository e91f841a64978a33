"""Rewrite a validated plan into guarded Python and compile it.

The plan's statements become the body of one function, ``__tf_main``, so that a
top-level ``return`` ends the plan with its value. Names still resolve as in a Python
module: builtins live in the run's ``__builtins__``, and every top-level name where the
difference shows (one that shadows a builtin, or that a function uses) is declared
``global`` in ``__tf_main``, so a plan variable shadows a builtin from its assignment on
and ``del`` uncovers it again (see :func:`module_globals`).

Every construct that could reach the host or grow without bound is routed through a
guard (see ``guards.py``); everything else runs as CPython bytecode, which is what makes
the sandbox fast. Positions are copied from the original nodes, so errors point at the
plan's own lines and columns.
"""

from __future__ import annotations

import ast
import copy
from types import CodeType

PLAN_FILENAME = "<tf_plan>"
MAIN_FUNCTION = "__tf_main"
_RESULT = "__tf_value"

#: Binary operators that can build large values; the others cannot (or only with numbers).
_GUARDED_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "__tf_add", ast.Sub: "__tf_sub", ast.Mult: "__tf_mul", ast.Pow: "__tf_pow",
    ast.LShift: "__tf_lshift", ast.Mod: "__tf_mod", ast.BitOr: "__tf_bitor",
    ast.BitAnd: "__tf_bitand", ast.BitXor: "__tf_bitxor",
}
#: Operators that are safe when one operand is a number literal (the result is a number).
_SAFE_WITH_NUMBER = (ast.Add, ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor)


def compile_plan(tree: ast.Module, provided: frozenset[str] = frozenset()) -> CodeType:
    """Compile a validated plan whose run provides the names ``provided`` (builtins,
    registered callables); raises ``SyntaxError`` for compiler-level errors."""
    rewritten = _Rewriter(provided).rewrite(copy.deepcopy(tree))  # the plan's tree stays
    return _as_module_code(compile(rewritten, PLAN_FILENAME, "exec"))


_MAIN_PREFIX = MAIN_FUNCTION + ".<locals>."


def _as_module_code(code: CodeType) -> CodeType:
    """``code`` with the plan's functions named as at module level (``f``, not
    ``__tf_main.<locals>.f``): Python's own error messages name them that way."""
    consts = tuple(_as_module_code(const) if isinstance(const, CodeType) else const
                   for const in code.co_consts)
    qualname = code.co_qualname.removeprefix(_MAIN_PREFIX)
    return code.replace(co_consts=consts, co_qualname=qualname)


_NESTED_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                  ast.GeneratorExp)


def module_globals(tree: ast.Module, provided: frozenset[str] = frozenset()) -> list[str]:
    """Top-level names of a plan that must live in the run's globals, not in fast locals.

    Python can tell the difference only for a name that shadows a builtin or registered
    callable (``provided``: an earlier use must still reach it, ``del`` uncovers it), a
    name a nested scope (function, lambda, comprehension) mentions, and a name a function
    declares ``global``. Every other top-level name stays a fast local of ``__tf_main``,
    which keeps top-level loops fast.
    """
    top: dict[str, None] = {}
    nested: set[str] = set()
    declared: dict[str, None] = {}
    stack: list[tuple[ast.AST, bool]] = [(node, False) for node in reversed(tree.body)]
    while stack:
        node, inner = stack.pop()
        if isinstance(node, ast.Name | ast.alias | ast.FunctionDef):
            name = node.id if isinstance(node, ast.Name) else node.name \
                if isinstance(node, ast.FunctionDef) else (node.asname or node.name)
            if inner:
                nested.add(name)
            elif not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
                top[name] = None
        elif isinstance(node, ast.Global):
            declared.update(dict.fromkeys(node.names))
        elif isinstance(node, ast.Nonlocal):
            nested.update(node.names)
        inner = inner or isinstance(node, _NESTED_SCOPES)
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(node))))
    chosen = {name: None for name in top if name in nested or name in provided}
    chosen.update(declared)
    return list(chosen)


def _name(identifier: str, node: ast.AST) -> ast.Name:
    return ast.copy_location(ast.Name(id=identifier, ctx=ast.Load()), node)


def _call(func: str, args: list[ast.expr], node: ast.AST) -> ast.Call:
    call = ast.Call(func=_name(func, node), args=args, keywords=[])
    return ast.copy_location(call, node)


def _module(name: str, node: ast.AST) -> ast.expr:
    """The helper module ``name`` as bound for every run, whatever the plan rebinds."""
    return ast.copy_location(
        ast.Subscript(value=_name("__tf_modules", node), slice=ast.Constant(value=name),
                      ctx=ast.Load()), node)


def _is_scalar_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) or _is_number(node)


def _deep(node: ast.expr) -> ast.expr:
    """``node`` checked before Python compares it (it may expand exponentially)."""
    return node if _is_scalar_constant(node) else _call("__tf_deep", [node], node)


def _key(node: ast.expr) -> ast.expr:
    """``node`` checked before Python hashes it as a dict key or set element."""
    return node if _is_scalar_constant(node) else _call("__tf_key", [node], node)


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, provided: frozenset[str]) -> None:
        self._provided = provided
        self._function_depth = 0
        self._temporaries = 0

    def rewrite(self, tree: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        bound = module_globals(tree, self._provided)
        if bound:
            body.append(ast.copy_location(ast.Global(names=bound), tree.body[0]))
        for statement in tree.body:
            if isinstance(statement, ast.Expr):
                value = self.visit(statement.value)
                target = ast.Name(id=_RESULT, ctx=ast.Store())
                assign = ast.Assign(targets=[target], value=value)
                body.append(ast.copy_location(assign, statement))
            else:
                visited = self.visit(statement)
                body.extend(visited if isinstance(visited, list) else [visited])
        start = ast.Assign(targets=[ast.Name(id=_RESULT, ctx=ast.Store())],
                           value=ast.Constant(value=None))
        finish = ast.Return(value=ast.Tuple(
            elts=[ast.Constant(value=False), ast.Name(id=_RESULT, ctx=ast.Load())],
            ctx=ast.Load()))
        main = ast.FunctionDef(
            name=MAIN_FUNCTION,
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                               defaults=[]),
            body=[ast.copy_location(start, tree.body[0]) if tree.body else start, *body, finish],
            decorator_list=[],
        )
        module = ast.Module(body=[main], type_ignores=[])
        main.lineno, main.col_offset = 1, 0
        return ast.fix_missing_locations(module)

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
        # depth and calls counted inline (list cells, not a call): calls stay cheap
        # [depth, calls]; one guard call only when a limit is crossed
        prologue = ast.parse(
            "__tf_frames[0] += 1\n__tf_frames[1] += 1\n"
            "if __tf_frames[0] > __tf_max_depth or __tf_frames[1] > __tf_max_calls:\n"
            "    __tf_too_deep()"
        ).body
        epilogue = ast.parse("__tf_frames[0] -= 1").body
        for statement in (*prologue, *epilogue):
            for child in ast.walk(statement):
                ast.copy_location(child, node)
        guarded = ast.Try(body=node.body, handlers=[], orelse=[], finalbody=epilogue)
        node.body = [*prologue, ast.copy_location(guarded, node)]
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1
        return node

    def visit_Return(self, node: ast.Return) -> ast.Return:
        self.generic_visit(node)
        if self._function_depth == 0:
            value = node.value or ast.Constant(value=None)
            node.value = ast.copy_location(
                ast.Tuple(elts=[ast.Constant(value=True), value], ctx=ast.Load()), node)
        return node

    def visit_Import(self, node: ast.Import) -> list[ast.stmt]:
        """``import math as m`` -> ``m = <math>``: the module every run has, bound under
        the name Python would bind (also when the plan had rebound ``math`` before)."""
        return [
            ast.copy_location(ast.Assign(
                targets=[ast.Name(id=alias.asname or alias.name, ctx=ast.Store())],
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
            target = ast.Name(id=alias.asname or alias.name, ctx=ast.Store())
            assign = ast.Assign(targets=[target],
                                value=self.visit(ast.copy_location(member, node)))
            assigns.append(ast.copy_location(assign, node))
        return assigns

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.Assign(targets=[node.target], value=node.value)
        return self.visit(ast.copy_location(assign, node))  # type: ignore[no-any-return]

    # -- loops -----------------------------------------------------------------------
    def visit_For(self, node: ast.For) -> ast.For:
        self.generic_visit(node)
        node.iter = _call("__tf_iter", [node.iter], node.iter)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        self.generic_visit(node)
        node.iter = _call("__tf_iter", [node.iter], node.iter)
        return node

    def visit_While(self, node: ast.While) -> ast.While:
        self.generic_visit(node)
        tick = ast.copy_location(ast.Expr(value=_call("__tf_tick", [], node)), node)
        node.body = [tick, *node.body]
        return node

    # -- operators -------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        guard = _GUARDED_BINOPS.get(type(node.op))
        if guard is None:
            return node
        if isinstance(node.op, _SAFE_WITH_NUMBER) and (
            _is_number(node.left) or _is_number(node.right)
        ):
            return node
        if isinstance(node.op, ast.Mult) and (
            (isinstance(node.left, ast.Constant) and type(node.left.value) is float)
            or (isinstance(node.right, ast.Constant) and type(node.right.value) is float)
        ):
            return node
        return _call(guard, [node.left, node.right], node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt | list[ast.stmt]:
        self.generic_visit(node)
        op_name = type(node.op).__name__
        if type(node.op) not in _GUARDED_BINOPS:
            return node
        if isinstance(node.op, _SAFE_WITH_NUMBER) and _is_number(node.value):
            return node
        if isinstance(node.target, ast.Name):
            if isinstance(node.op, ast.Add):
                # x += v stays a native += so CPython can append to strings in place.
                load = _name(node.target.id, node.target)
                node.value = _call("__tf_check_iadd", [load, node.value], node.value)
                return node
            load = _name(node.target.id, node.target)
            value = _call(f"__tf_iop_{op_name}", [load, node.value], node)
            return ast.copy_location(ast.Assign(targets=[node.target], value=value), node)
        assert isinstance(node.target, ast.Subscript)  # attributes cannot be assigned
        # d[k] op= v  ->  t1 = d; t2 = k; t1[t2] = guard(t1[t2], v)  (each evaluated once)
        container, key = self._temporary(), self._temporary()
        prelude = [
            ast.Assign(targets=[ast.Name(id=container, ctx=ast.Store())],
                       value=node.target.value),
            ast.Assign(targets=[ast.Name(id=key, ctx=ast.Store())], value=node.target.slice),
        ]
        current = ast.Subscript(value=_name(container, node), slice=_name(key, node),
                                ctx=ast.Load())
        value = _call(f"__tf_iop_{op_name}", [current, node.value], node)
        store = ast.Subscript(value=_name(container, node), slice=_name(key, node),
                              ctx=ast.Store())
        update = ast.Assign(targets=[store], value=value)
        return [ast.copy_location(stmt, node) for stmt in (*prelude, update)]

    def _temporary(self) -> str:
        self._temporaries += 1
        return f"__tf_t{self._temporaries}"

    # -- comparing and hashing -------------------------------------------------------
    def visit_Compare(self, node: ast.Compare) -> ast.Compare:
        self.generic_visit(node)
        if all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            return node
        operands = [node.left, *node.comparators]
        if len(operands) == 2 and any(_is_scalar_constant(part) for part in operands):
            return node  # comparing with a literal never walks a structure
        node.left = _deep(node.left)
        node.comparators = [_deep(part) for part in node.comparators]
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.Dict:
        self.generic_visit(node)
        node.keys = [None if key is None else _key(key) for key in node.keys]
        node.values = [
            _call("__tf_star", [value], value) if key is None else value
            for key, value in zip(node.keys, node.values, strict=True)
        ]
        return node

    def visit_Set(self, node: ast.Set) -> ast.Set:
        self.generic_visit(node)
        node.elts = [elt if isinstance(elt, ast.Starred) else _key(elt) for elt in node.elts]
        return node

    def visit_SetComp(self, node: ast.SetComp) -> ast.SetComp:
        self.generic_visit(node)
        node.elt = _key(node.elt)
        return node

    def visit_DictComp(self, node: ast.DictComp) -> ast.DictComp:
        self.generic_visit(node)
        node.key = _key(node.key)
        return node

    # -- access ----------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        self.generic_visit(node)
        attribute = ast.copy_location(ast.Constant(value=node.attr), node)
        return _call("__tf_attr", [node.value, attribute], node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.slice, ast.Slice):
            if isinstance(node.ctx, ast.Load):
                bounds = [part or ast.Constant(value=None)
                          for part in (node.slice.lower, node.slice.upper, node.slice.step)]
                return _call("__tf_slice", [node.value, *bounds], node)
            return node
        node.slice = _key(node.slice)
        return node

    def visit_Starred(self, node: ast.Starred) -> ast.Starred:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            node.value = _call("__tf_star", [node.value], node.value)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.expr:
        self.generic_visit(node)
        if any(isinstance(part, ast.FormattedValue) for part in node.values):
            return _call("__tf_checked", [node], node)  # f"{s}{s}" must not double freely
        return node

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.FormattedValue:
        self.generic_visit(node)
        spec: ast.expr = node.format_spec or ast.Constant(value="")
        conversion = ast.Constant(value=node.conversion)
        node.value = _call("__tf_fv", [node.value, conversion, spec], node.value)
        node.conversion = -1
        node.format_spec = None
        return node

    # -- calls -----------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        for keyword in node.keywords:
            if keyword.arg is None:
                keyword.value = _call("__tf_star", [keyword.value], keyword.value)
        if isinstance(node.func, ast.Name) and node.func.id == "parallel" and not node.keywords:
            node.func = _name("__tf_parallel", node.func)
            node.args = [self._thunk(arg) for arg in node.args]
        return node

    def _thunk(self, arg: ast.expr) -> ast.expr:
        """``e`` -> ``__tf_thunk(lambda: e)``; ``*[e for x in xs]`` -> one thunk per item."""
        if isinstance(arg, ast.Starred):
            inner = arg.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
                    and inner.func.id == "__tf_star" and inner.args:
                inner = inner.args[0]
            if isinstance(inner, ast.ListComp | ast.GeneratorExp):
                names = _bound_names(inner.generators)
                params = ast.arguments(
                    posonlyargs=[], args=[ast.arg(arg=name) for name in names], kwonlyargs=[],
                    kw_defaults=[], defaults=[])
                function = ast.copy_location(ast.Lambda(args=params, body=inner.elt), inner)
                bound = [_name(name, inner) for name in names]
                thunk = _call("__tf_thunk", [function, *bound], inner.elt)
                listing = ast.ListComp(elt=thunk, generators=inner.generators)
                return ast.copy_location(
                    ast.Starred(value=ast.copy_location(listing, inner), ctx=ast.Load()), arg)
            return arg
        function = ast.copy_location(
            ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                          kw_defaults=[], defaults=[]), body=arg), arg)
        return _call("__tf_thunk", [function], arg)


def _bound_names(generators: list[ast.comprehension]) -> list[str]:
    names: list[str] = []
    for generator in generators:
        for node in ast.walk(generator.target):
            if isinstance(node, ast.Name) and node.id not in names:
                names.append(node.id)
    return names
