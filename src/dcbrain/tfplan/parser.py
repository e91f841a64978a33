"""Parse tf_plan source with CPython's ``ast`` and accept only the language's node types.

The allowlist below *is* the grammar of tf_plan on top of Python's: a node type that is
not listed is rejected, so new Python syntax is excluded until someone decides to allow
it. ``docs/tfplan.md`` documents the same table; a test keeps the two in sync.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, ClassVar

from dcbrain.tfplan.errors import Problem, TFSyntaxError, first_problems, source_lines
from dcbrain.tfplan.methods import MODULE_MEMBERS

#: Special functions a plan may call although their names start with ``__``.
SPECIAL_NAMES = frozenset({"__construct_chain"})
#: Modules a plan may import (their names are always bound; importing rebinds them).
IMPORTABLE_MODULES = frozenset({"math", "json", "datetime", "decimal"})
#: The file name compiled plan code carries (how tracebacks find the plan's own frames).
PLAN_FILENAME = "<tf_plan>"
#: The function the compiled plan's top level becomes.
MAIN_FUNCTION = "__tf_main"

#: Source size a plan may have; an LLM plan is a few hundred lines at most.
MAX_SOURCE_CHARS = 200_000
#: Nesting depth of the syntax tree; deeper trees are rejected before compiling.
MAX_TREE_DEPTH = 100
#: Syntax nodes a plan may have (a long LLM plan has a few thousand): checking, rewriting
#: and compiling cost time and memory in proportion to them.
MAX_TREE_NODES = 20_000
#: Plans of at most this many distinct nodes keep the parser's listing of their child nodes
#: (:attr:`Plan.children`) for the checks that walk them again; a larger plan's listing
#: would hold memory for as long as the plan is cached, and it is walked as it is.
MAX_LISTED_NODES = 5_000

#: Held while CPython turns source into syntax tree objects or those into code, with
#: warnings silenced: before 3.13 it counts their nesting in one counter for all threads,
#: and two threads doing it at once fail with "AST constructor recursion depth mismatch".
SYNTAX_TREE_LOCK = threading.Lock()

#: Node types of tf_plan, with the construct they stand for (used by docs and errors).
ALLOWED_NODES: dict[type[ast.AST], str] = {
    ast.Module: "module",
    # statements
    ast.Expr: "expression statement",
    ast.Assign: "assignment",
    ast.AugAssign: "augmented assignment",
    ast.AnnAssign: "annotated assignment",
    ast.If: "if statement",
    ast.For: "for loop",
    ast.While: "while loop",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.FunctionDef: "function definition",
    ast.Return: "return",
    ast.Pass: "pass",
    ast.Delete: "del statement",
    ast.Assert: "assert statement",
    ast.Raise: "raise statement",
    ast.Import: "import of math, json, datetime or decimal",
    ast.ImportFrom: "from-import of math, json, datetime or decimal",
    ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement",
    # expressions
    ast.BoolOp: "boolean operation",
    ast.NamedExpr: "assignment expression (walrus)",
    ast.BinOp: "binary operation",
    ast.UnaryOp: "unary operation",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression",
    ast.Dict: "dict display",
    ast.Set: "set display",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Compare: "comparison",
    ast.Call: "call",
    ast.FormattedValue: "f-string field",
    ast.JoinedStr: "f-string",
    ast.Constant: "constant",
    ast.Attribute: "method access",
    ast.Subscript: "subscript",
    ast.Starred: "starred expression",
    ast.Name: "name",
    ast.List: "list display",
    ast.Tuple: "tuple display",
    ast.Slice: "slice",
    # helpers
    ast.comprehension: "comprehension clause",
    ast.arguments: "parameters",
    ast.arg: "parameter",
    ast.keyword: "keyword argument",
    ast.Load: "load",
    ast.Store: "store",
    ast.Del: "delete",
    ast.alias: "imported name",
}
ALLOWED_NODES.update({op: "operator" for op in (
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.MatMult, ast.Invert,
    ast.Not, ast.UAdd, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
    ast.Is, ast.IsNot, ast.In, ast.NotIn,
)})

#: Constructs rejected with a specific name (everything unlisted gets its class name).
REJECTED_NODES: dict[type[ast.AST], str] = {
    ast.Try: "try statement",
    ast.TryStar: "try statement",
    ast.With: "with statement",
    ast.AsyncWith: "async with statement",
    ast.ClassDef: "class definition",
    ast.AsyncFunctionDef: "async function",
    ast.AsyncFor: "async for loop",
    ast.Await: "await expression",
    ast.Yield: "yield expression",
    ast.YieldFrom: "yield from expression",
    ast.Match: "match statement",
}

_FENCE = re.compile(r"```[ \t]*(tf_plan|tfplan|python|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.S)


@dataclass
class Plan:
    """A parsed, validated plan: its source and syntax tree (positions kept)."""

    source: str
    tree: ast.Module
    defined_functions: set[str] = field(default_factory=set)
    #: The child nodes of every node of ``tree`` (nodes hash by identity), as the parser
    #: listed them (see :func:`child_lister`); ``None`` for a tree it did not validate.
    children: dict[ast.AST, list[ast.AST]] | None = field(default=None, repr=False,
                                                           compare=False)
    #: :meth:`nodes`, once listed (from ``children``)
    _listed: list[ast.AST] | None = field(default=None, init=False, repr=False, compare=False)

    @cached_property
    def lines(self) -> list[str]:
        return source_lines(self.source)

    def child_nodes(self) -> Callable[[ast.AST], Sequence[ast.AST]]:
        """``iter_child_nodes`` for this plan's tree (never change what it gives)."""
        return child_lister(self.children)

    def nodes(self) -> list[ast.AST]:
        """Every node of the tree, in the order of :func:`walk` (listed once for the
        parser's tree, whose readers only read it: never change what it gives)."""
        if self.children is None:
            return list(walk(self.tree))
        listed = self._listed
        if listed is None:
            listed = self._listed = walk_listed(self.tree, self.children)
        return listed


def extract_plan(reply: str) -> str | None:
    """The script in an LLM reply's ```tf_plan block (```python accepted), else ``None``.

    A missing closing fence is tolerated; a ``tf_plan`` block wins over a ``python`` one.
    """
    blocks = [(m.group(1) or "", m.group(2)) for m in _FENCE.finditer(reply)]
    for lang, body in blocks:
        if lang in ("tf_plan", "tfplan"):
            return body.strip("\n")
    for lang, body in blocks:
        if lang in ("python", "py"):
            return body.strip("\n")
    return None


def parse(source: str, *, shared: bool = False) -> Plan:
    """Parse and validate ``source``; raise :class:`TFSyntaxError` listing every problem.

    ``shared``: the plan's tree is :func:`shared_tree`'s, which other readers of the same
    source read too (for a plan that is only read, as the interpreter's compiled plans)."""
    if len(source) > MAX_SOURCE_CHARS:
        problem = Problem(1, 1, f"plan is {len(source)} characters; the limit is "
                                f"{MAX_SOURCE_CHARS}", kind="SyntaxError")
        raise TFSyntaxError([problem], source)
    try:
        tree = shared_tree(source) if shared else syntax_tree(source)
    except SyntaxError as exc:
        line, col = exc.lineno or 1, exc.offset or 1
        problem = Problem(line, col, exc.msg, kind="SyntaxError")
        raise TFSyntaxError([problem], source) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        message = "plan is nested too deeply" if not isinstance(exc, ValueError) else str(exc)
        raise TFSyntaxError([Problem(1, 1, message, kind="SyntaxError")], source) from None
    validator = _Validator()
    problems = validator.validate(tree)
    if problems:
        error = TFSyntaxError(problems, source)
        if not validator.too_large:  # well-formed Python: the checker can report the rest
            error.tree = tree
        try:
            raise error
        finally:
            del error  # a frame holding the error it raises is a cycle
    listed = validator.children if len(validator.children) <= MAX_LISTED_NODES else None
    return Plan(source=source, tree=tree, defined_functions=validator.defined,
                children=listed)


def syntax_tree(source: str) -> ast.Module:
    """``ast.parse(source)``, one thread at a time (see :data:`SYNTAX_TREE_LOCK`).

    The lock orders dcbrain's own parses; another library parsing in another thread at
    the same moment can still reset CPython's shared counter under this one, which then
    fails with a spurious ``SystemError``. Parsing is deterministic, so it is tried again.
    """
    for attempt in range(_PARSE_TRIES):
        with SYNTAX_TREE_LOCK, warnings.catch_warnings():  # also not safe for threads
            warnings.simplefilter("ignore")  # a plan's SyntaxWarnings must not reach host stderr
            try:
                return ast.parse(source, filename="<tf_plan>", mode="exec")
            except SystemError as exc:
                if not str(exc).startswith(_DEPTH_MISMATCH) or attempt == _PARSE_TRIES - 1:
                    raise
    raise AssertionError("the last try returns or raises")


@lru_cache(maxsize=32)
def shared_tree(source: str) -> ast.Module:
    """:func:`syntax_tree` of ``source``, parsed once for every reader that only reads it
    (a run lists a plan's calls before it parses it to run it). Never change this tree:
    a rewrite parses its own copy."""
    return syntax_tree(source)


@lru_cache(maxsize=32)
def shared_plan(source: str) -> Plan:
    """``parse(source, shared=True)``, validated once for every reader that only reads the
    plan (a run lists a plan's calls when the planner writes it, then checks and compiles
    it); raises :class:`TFSyntaxError` as :func:`parse` does (a refusal is not kept: each
    caller gets an error of its own). Never change the plan or its tree."""
    return parse(source, shared=True)


#: CPython's words for the race above, and how many parses it may spoil in a row.
_DEPTH_MISMATCH = "AST constructor recursion depth mismatch"
_PARSE_TRIES = 3


def _is_reserved(name: str) -> bool:
    return name.startswith("__") and name not in SPECIAL_NAMES


def _reserved(what: str, name: str) -> str:
    return f"{what} {name!r} is not allowed in tf_plan (names starting with '__' are reserved)"


class _Validator:
    """Walks the tree iteratively (no recursion limit) and collects the first problems."""

    too_large = False

    def __init__(self) -> None:
        #: names of the functions the plan defines (every node is visited when it is valid)
        self.defined: set[str] = set()
        #: the child nodes of every node visited (see :attr:`Plan.children`)
        self.children: dict[ast.AST, list[ast.AST]] = {}

    def validate(self, tree: ast.Module) -> list[Problem]:
        problems: list[Problem] = []
        stack: list[tuple[ast.AST, int, bool]] = [(tree, 0, False)]
        pop, push = stack.pop, stack.append
        children = self.children
        visited = 0
        while stack:
            node, depth, in_function = pop()
            visited += 1
            if visited > MAX_TREE_NODES:
                problems.append(Problem(1, 1, "plan is too large: more than the limit of "
                                              f"{MAX_TREE_NODES} syntax nodes",
                                        kind="SyntaxError"))
                self.too_large = True
                break
            if depth > MAX_TREE_DEPTH:
                problems.append(_problem(node, f"expression nested deeper than {MAX_TREE_DEPTH}"
                                               " levels"))
                continue
            kind = type(node)
            if kind not in ALLOWED_NODES:
                problems.append(_problem(node, self._check_node(node, in_function) or ""))
                continue
            check = _NODE_CHECKS.get(kind)
            if check is not None:
                message = check(node, in_function)
                if message is not None:
                    problems.append(_problem(node, message))
            if kind is ast.FunctionDef:
                self.defined.add(node.name)  # type: ignore[attr-defined]
                in_function = True
            elif kind is ast.Lambda:
                in_function = True
            found = iter_child_nodes(node)
            children[node] = found
            depth += 1
            for child in found:
                push((child, depth, in_function))
        problems.sort(key=lambda p: (p.line, p.col))
        return first_problems(problems)

    def _check_node(self, node: ast.AST, in_function: bool) -> str | None:
        kind = type(node)
        if kind not in ALLOWED_NODES:
            construct = REJECTED_NODES.get(kind, kind.__name__)
            return f"{construct} is not allowed in tf_plan"
        check = _NODE_CHECKS.get(kind)
        return None if check is None else check(node, in_function)


def _check_name(node: Any, in_function: bool) -> str | None:
    return _reserved("name", node.id) if _is_reserved(node.id) else None


def _check_attribute(node: Any, in_function: bool) -> str | None:
    if node.attr.startswith("_"):
        return (f"attribute {node.attr!r} is not allowed in tf_plan "
                "(names starting with '_')")
    if not isinstance(node.ctx, ast.Load):
        return "attribute assignment is not allowed in tf_plan"
    return None


def _check_function(node: Any, in_function: bool) -> str | None:
    if node.decorator_list:
        return "decorator is not allowed in tf_plan"
    if _is_reserved(node.name):
        return _reserved("function name", node.name)
    return None


def _check_arg(node: Any, in_function: bool) -> str | None:
    return _reserved("parameter", node.arg) if _is_reserved(node.arg) else None


def _check_keyword(node: Any, in_function: bool) -> str | None:
    if node.arg is not None and _is_reserved(node.arg):
        return _reserved("keyword", node.arg)
    return None


def _check_constant(node: Any, in_function: bool) -> str | None:
    if isinstance(node.value, bytes):
        return "bytes literal is not allowed in tf_plan"
    if node.value is Ellipsis:
        return "'...' is not allowed in tf_plan"
    return None


def _node_checks() -> dict[type, Callable[[Any, bool], str | None]]:
    """The check of each allowed node type that has one (by its class, as ``isinstance``)."""
    checks: list[tuple[type | tuple[type, ...], Callable[[Any, bool], str | None]]] = [
        (ast.Name, _check_name), (ast.Attribute, _check_attribute),
        (ast.FunctionDef, _check_function), (ast.arg, _check_arg),
        (ast.keyword, _check_keyword),
        ((ast.Global, ast.Nonlocal), lambda node, inner: _check_declaration(node, inner)),
        ((ast.Import, ast.ImportFrom), lambda node, inner: _check_import(node)),
        (ast.Constant, _check_constant),
    ]
    found: dict[type, Callable[[Any, bool], str | None]] = {}
    for kind in ALLOWED_NODES:
        for classes, check in checks:
            if issubclass(kind, classes):
                found[kind] = check
                break
    return found


def _check_declaration(node: ast.Global | ast.Nonlocal, in_function: bool) -> str | None:
    if isinstance(node, ast.Nonlocal) and not in_function:
        return "nonlocal declaration not allowed at module level"
    for name in node.names:
        if _is_reserved(name):
            return _reserved("name", name)
    return None


def _check_import(node: ast.Import | ast.ImportFrom) -> str | None:
    """Only the helper modules can be imported; all are always bound already."""
    allowed = ", ".join(f"'{module}'" for module in sorted(IMPORTABLE_MODULES))
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in IMPORTABLE_MODULES:
                return f"import of {alias.name!r} is not allowed in tf_plan (only {allowed})"
            if alias.asname is not None and _is_reserved(alias.asname):
                return _reserved("name", alias.asname)
        return None
    if node.level or node.module not in IMPORTABLE_MODULES:
        module = "." * node.level + (node.module or "")
        return f"import from {module!r} is not allowed in tf_plan (only {allowed})"
    members = MODULE_MEMBERS[node.module]
    for alias in node.names:
        if alias.name == "*":
            return f"'from {node.module} import *' is not allowed in tf_plan"
        if alias.name not in members:
            return f"cannot import name {alias.name!r} from {node.module!r}"
        if alias.asname is not None and _is_reserved(alias.asname):
            return _reserved("name", alias.asname)
    return None


def _problem(node: ast.AST, message: str) -> Problem:
    line = getattr(node, "lineno", 1)
    col = getattr(node, "col_offset", 0) + 1
    return Problem(line, col, message, kind="SyntaxError")


_NODE_CHECKS = _node_checks()


# -- walking a plan's tree ---------------------------------------------------------------
# The checks and rewrites walk small plan trees many times; ``ast.walk`` and
# ``ast.iter_child_nodes`` spend most of that time in two generator layers per node.
# These give the same nodes in the same order.


def iter_child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct child nodes of ``node``, in field order (as ``ast.iter_child_nodes``)."""
    children: list[ast.AST] = []
    append = children.append
    for name in node._fields:
        try:
            value = getattr(node, name)
        except AttributeError:
            continue
        if isinstance(value, ast.AST):
            append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    append(item)
    return children


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself included), breadth first (as ``ast.walk``).

    The loop of :func:`iter_child_nodes` is written out here: calling it per node costs
    this walk 1.6x (measured over the checker's own tree)."""
    todo = deque([node])
    popleft, append = todo.popleft, todo.append
    while todo:
        node = popleft()
        for name in node._fields:
            try:
                value = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(value, ast.AST):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
        yield node


def child_lister(children: Mapping[ast.AST, Sequence[ast.AST]] | None
                 ) -> Callable[[ast.AST], Sequence[ast.AST]]:
    """A function giving a node's child nodes as :func:`iter_child_nodes` does: read from
    ``children`` (:attr:`Plan.children`, which lists every node of its tree), else found.
    What it gives may be shared: never change it."""
    return iter_child_nodes if children is None else children.__getitem__


def walk_listed(node: ast.AST, children: Mapping[ast.AST, Sequence[ast.AST]] | None
                ) -> list[ast.AST]:
    """``list(walk(node))``, the child nodes read from ``children`` (which lists every
    node under ``node``) when given."""
    if children is None:
        return list(walk(node))
    listed = children.__getitem__
    nodes = [node]
    extend = nodes.extend
    for item in nodes:  # grows as it goes: breadth first
        extend(listed(item))
    return nodes


# -- transforming a plan's tree -----------------------------------------------------------
# ``ast.NodeTransformer`` with the same results at a fraction of its per-node cost.
#
# The rewriters visit every node of a plan once per compile. ``ast.NodeTransformer`` looks
# up each node's method by building its name and calling ``getattr``, walks the fields
# through a generator, and visits every context and operator node (``Load``, ``Add``), each
# a call that gives the node back unchanged. :class:`Transformer` finds a method once per
# node type, walks the fields in a plain loop, and leaves out the nodes whose visit cannot
# change anything: those of a type without a method of its own and without child nodes.

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
