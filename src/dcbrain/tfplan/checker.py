"""Static check of a plan before it runs ("compiling" it against known chains and tools).

Reports, all at once and with positions: names bound nowhere the reading scope can see
(names resolve scope by scope, see ``scopes.py``), calls to
unknown functions, keyword arguments a chain/tool does not take, missing required ones,
positional arguments to keyword-only callables, literal arguments of a type a tool's
schema refuses, methods that no value type has, and fields read from results whose
declared shape has no such field (``_result_fields.py``), and calls of a plan's own
chain that leave out a name its prompt substitutes (``_chain_prompts.py``).
A bad plan then costs a replan, not an execution.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from dcbrain.tfplan._argument_types import literal_mismatch
from dcbrain.tfplan._chain_prompts import prompt_argument_problems
from dcbrain.tfplan._result_fields import field_problems
from dcbrain.tfplan.builtins import BUILTIN_NAMES as BUILTIN_NAMES
from dcbrain.tfplan.errors import Problem, TFSyntaxError, first_problems
from dcbrain.tfplan.flow import flow_problems
from dcbrain.tfplan.methods import ALL_METHOD_NAMES, MODULE_MEMBERS
from dcbrain.tfplan.parser import Plan, parse
from dcbrain.tfplan.scopes import resolve

#: Unknown names that get a "did you mean" hint; past it a plan of garbage stays linear.
_MAX_HINTS = 20
#: Known names compared with an unknown one for a hint (difflib compares each pair in
#: quadratic time).
_MAX_HINT_CANDIDATES = 100
#: Names longer than this get no hint: a typo of a long name is easy to see.
_MAX_HINT_NAME = 64
#: Registered chains and tools an "unknown function" problem lists.
_MAX_LISTED = 30

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                               list: "array", dict: "object", type(None): "null"}
#: Plan value types a JSON schema writes as strings of a format (``format: date-time``).
_STRING_FORMATS: dict[Any, str] = {Decimal: "decimal", date: "date", datetime: "date-time",
                                   time: "time", timedelta: "duration"}
# the same annotations written as text (``from __future__ import annotations``)
_STRING_FORMATS.update({name: string_format for kind, string_format in list(
    _STRING_FORMATS.items()) for name in (kind.__name__, f"{kind.__module__}.{kind.__name__}")})


@dataclass(frozen=True)
class CallableSpec:
    """What the checker and the planner know of a chain or tool.

    ``parameters`` is a JSON schema of the keyword arguments (``properties``,
    ``required``, ``additionalProperties``); ``positional`` lists the parameters that
    may also be passed by position, in order (empty: keywords only). ``validates`` says
    that every call is validated against ``parameters`` (a tool's is; a chain formats
    what it gets into its prompt, and a plain function takes what it is given), so a
    literal of a type the schema refuses is an error before the run.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    returns: dict[str, Any] | None = None
    positional: tuple[str, ...] = ()
    accepts_var_positional: bool = False
    kind: str = "tool"
    validates: bool = False
    #: Trust declarations (see :mod:`dcbrain.tfplan.flow`): whether results are trusted
    #: data, whether a call changes anything, which arguments must carry trusted data only.
    trusted_output: bool = False
    side_effects: bool = True
    trusted_args: frozenset[str] = frozenset()
    #: Fields of the result's records that are trusted data (``trusted_output`` false).
    trusted_fields: frozenset[str] = frozenset()
    #: What the docstring's ``Returns:`` says, and an example result (for planners).
    returns_doc: str = ""
    example: Any = None

    @classmethod
    def from_callable(cls, name: str, func: Callable[..., Any]) -> CallableSpec:
        """The spec of a chain (anything with ``parameters_schema``) or a Python function,
        with the trust it declares (``trusted_output``, ``trusted_fields``,
        ``side_effects``, ``trusted_args``)."""
        spec = cls._from_signature(name, func)
        return dataclasses.replace(
            spec, trusted_output=getattr(func, "trusted_output", False) is True,
            side_effects=getattr(func, "side_effects", True) is not False,
            trusted_args=_names(getattr(func, "trusted_args", ())),
            trusted_fields=_names(getattr(func, "trusted_fields", ())),
            returns_doc=str(getattr(func, "returns_doc", "") or ""),
            example=getattr(func, "example", None))

    @classmethod
    def _from_signature(cls, name: str, func: Callable[..., Any]) -> CallableSpec:
        schema = getattr(func, "parameters_schema", None)
        description = getattr(func, "description", None)
        if description is None:
            description = _first_paragraph(func.__doc__)
        returns = getattr(func, "returns_schema", None)
        kind = getattr(func, "callable_kind", "tool")
        signature = _signature(func)
        validates = isinstance(schema, dict) and kind == "tool"
        if isinstance(schema, dict) and signature is None:
            return cls(name, str(description), schema, returns, (), False, kind, validates)
        if signature is None:
            return cls(name, str(description), {"type": "object"}, returns, (), True, kind)
        positional: list[str] = []
        properties: dict[str, Any] = {}
        required: list[str] = []
        var_positional = var_keyword = False
        for param in signature.parameters.values():
            if param.kind is param.VAR_POSITIONAL:
                var_positional = True
                continue
            if param.kind is param.VAR_KEYWORD:
                var_keyword = True
                continue
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                positional.append(param.name)
            if param.kind is param.POSITIONAL_ONLY:
                continue
            properties[param.name] = _annotation_schema(param.annotation)
            if param.default is param.empty:
                required.append(param.name)
        if isinstance(schema, dict):
            parameters = schema
        else:
            parameters = {"type": "object", "properties": properties, "required": required,
                          "additionalProperties": var_keyword}
        return cls(name, str(description), parameters, returns, tuple(positional),
                   var_positional, kind, validates)

    def describe(self) -> dict[str, Any]:
        """JSON-able description for planning prompts."""
        return {"name": self.name, "kind": self.kind, "description": self.description,
                "parameters": self.parameters, "returns": self.returns}


def specs_of(callables: Mapping[str, Callable[..., Any]]) -> dict[str, CallableSpec]:
    return {name: CallableSpec.from_callable(name, func) for name, func in callables.items()}


def check(
    plan: Plan | str,
    specs: Mapping[str, CallableSpec] | Iterable[CallableSpec] = (),
    *,
    flow: bool = True,
    chain_inputs: Iterable[str] = (),
    literals: frozenset[str] = frozenset(),
    strict: bool = False,
) -> list[Problem]:
    """Every problem of ``plan`` against ``specs``, in source order (empty: the plan is fine).

    ``chain_inputs`` are the names every chain call has without passing them (the
    interpreter's ``additional_info``): a plan's own chain may substitute them.

    Syntax problems of a source string are returned as problems too. With ``flow`` (the
    default) untrusted data that certainly reaches an argument a callable declares in
    ``trusted_args`` is a problem too (:func:`~dcbrain.tfplan.flow.flow_problems`);
    ``flow=False`` leaves such flows to the checks made while the plan runs. ``literals``
    are the untrusted sources the planner was shown: the plan's literals carry them.
    ``strict`` is the policy mode ``"strict"``: the conditions a value is computed or a
    call made under carry their data too, as at run time.
    """
    by_name = dict(specs) if isinstance(specs, Mapping) else {s.name: s for s in specs}
    if isinstance(plan, str):
        source = plan
        try:
            plan = parse(source)
        except TFSyntaxError as exc:
            if exc.tree is None:  # not even Python: nothing more can be said
                return list(exc.problems)
            rest = _Checker(Plan(source=source, tree=exc.tree), by_name, flow,
                            chain_inputs, literals, strict).run()
            return first_problems(sorted([*exc.problems, *rest], key=lambda p: (p.line, p.col)))
    return first_problems(_Checker(plan, by_name, flow, chain_inputs, literals,
                                   strict).run())


class _Checker:
    def __init__(self, plan: Plan, specs: Mapping[str, CallableSpec], flow: bool,
                 chain_inputs: Iterable[str] = (),
                 literals: frozenset[str] = frozenset(), strict: bool = False) -> None:
        self.chain_inputs = frozenset(chain_inputs)
        self.strict = strict
        self.literals = literals
        self.plan = plan
        self.specs = specs
        self.flow = flow
        self.problems: list[Problem] = []
        self._child_nodes = plan.child_nodes()  # as the parser listed them
        self.resolution = resolve(plan.tree, self._child_nodes)
        self._nodes = plan.nodes()  # one walk for the checks below
        self.called = {  # names in call position, to tell unknown functions from names
            id(node.func) for node in self._nodes if isinstance(node, ast.Call)
        }
        self.plan_bound: set[int] = set()  # ids of names that resolve to a plan binding
        self.hints: dict[str, str] = {}
        self._known_by_initial: dict[str, list[str]] | None = None
        self._registered: str | None = None

    def run(self) -> list[Problem]:
        available = BUILTIN_NAMES | set(self.specs)
        unknown: list[ast.Name] = []
        for name, scope in self.resolution.reads:
            if self.resolution.binds(name.id, scope):
                self.plan_bound.add(id(name))
            elif name.id not in available:
                unknown.append(name)
        unknown.sort(key=lambda name: (name.lineno, name.col_offset))  # hints for the first
        for name in unknown:
            self._unknown_name(name, available)
        builds_chains = False  # a plan without __construct_chain(...) has no prompt to check
        for node in self._nodes:
            if isinstance(node, ast.Call):
                self._check_call(node)
                func = node.func
                builds_chains = builds_chains or (
                    isinstance(func, ast.Name) and func.id == "__construct_chain")
            elif isinstance(node, ast.Attribute) and node.attr not in ALL_METHOD_NAMES \
                    and not _is_namespace_access(node):
                self._add(node, f"no value in tf_plan has a method {node.attr!r}")
        for node, message in field_problems(self.plan.tree, self.specs, self._nodes,
                                            self._child_nodes):
            self._add(node, message)
        if builds_chains:
            for node, message in prompt_argument_problems(self.plan.tree, self.chain_inputs,
                                                          self._nodes):
                self._add(node, message)
        self._check_replan_with()
        if self.flow:
            self.problems += flow_problems(self.plan, self.specs, self.literals,
                                           strict=self.strict)
        self.problems.sort(key=lambda p: (p.line, p.col))
        return self.problems

    def _check_replan_with(self) -> None:
        """``replan_with(value)`` ends the plan: a top-level ``return replan_with(x)`` or the
        plan's last statement, with one argument."""
        if "replan_with" not in self.plan.source:
            return
        body = self.plan.tree.body
        allowed: set[int] = set()
        if body and isinstance(body[-1], ast.Expr):
            allowed.add(id(body[-1].value))
        stack: list[ast.AST] = list(body)
        while stack:  # top-level returns, not those of plan functions
            node = stack.pop()
            if isinstance(node, ast.Return) and node.value is not None:
                allowed.add(id(node.value))
            if not isinstance(node, ast.FunctionDef | ast.Lambda):
                stack.extend(self._child_nodes(node))
        for node in self._nodes:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "replan_with" and id(node.func) not in self.plan_bound:
                if id(node) not in allowed:
                    self._add(node, "replan_with(value) ends the plan: write `return "
                                    "replan_with(value)` at the top level, not inside an "
                                    "expression or a function")
                elif len(node.args) != 1 or node.keywords \
                        or isinstance(node.args[0], ast.Starred):
                    self._add(node, "replan_with takes exactly one value: "
                                    "replan_with({\"email\": text})")

    def _unknown_name(self, node: ast.Name, available: frozenset[str]) -> None:
        hint = self.hints.get(node.id)
        if hint is None:
            hint = ""
            if len(self.hints) < _MAX_HINTS and len(node.id) <= _MAX_HINT_NAME:
                close = difflib.get_close_matches(node.id, self._candidates(node.id, available),
                                                  n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
            self.hints[node.id] = hint
        if id(node) in self.called:
            if self._registered is None:
                self._registered = _listing(sorted(self.specs)) or "none registered"
            self._add(node, f"unknown function {node.id!r}{hint} (chains and tools: "
                            f"{self._registered})")
        else:
            self._add(node, f"name {node.id!r} is never assigned{hint}")

    def _candidates(self, name: str, available: frozenset[str]) -> list[str]:
        """At most :data:`_MAX_HINT_CANDIDATES` known names with the first letter of
        ``name``, the nearest to it in length (typos rarely change the first letter)."""
        if self._known_by_initial is None:
            self._known_by_initial = {}
            for known in sorted(available | self.resolution.module.bound,
                                key=lambda known: (len(known), known)):
                self._known_by_initial.setdefault(known[:1].lower(), []).append(known)
        pool = self._known_by_initial.get(name[:1].lower(), [])
        middle = bisect.bisect_left(pool, len(name), key=len)
        start = max(0, middle - _MAX_HINT_CANDIDATES // 2)
        return pool[start:start + _MAX_HINT_CANDIDATES]

    def _check_call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Name):
            return
        name = node.func.id
        spec = self.specs.get(name)
        if spec is None or id(node.func) in self.plan_bound:
            return
        has_star_args = any(isinstance(arg, ast.Starred) for arg in node.args)
        has_star_kwargs = any(keyword.arg is None for keyword in node.keywords)
        properties = spec.parameters.get("properties")
        # A chain's extra keyword arguments travel in its input's
        # additional_kwargs, so only a schema that says so closes them
        accepts_extra = spec.parameters.get("additionalProperties", True) is not False
        label = f"{spec.kind} {name!r}"
        if node.args and not has_star_args:
            if not spec.positional and not spec.accepts_var_positional:
                self._add(node, f"{label} takes keyword arguments only, e.g. "
                                f"{name}({_example_kwargs(spec)})")
            elif len(node.args) > len(spec.positional) and not spec.accepts_var_positional:
                self._add(node, f"{label} takes at most {len(spec.positional)} positional "
                                f"arguments, got {len(node.args)}")
        given = set(spec.positional[: len(node.args)])
        if spec.validates and isinstance(properties, dict):
            self._check_literals(label, node, spec.positional, properties)
        for keyword in node.keywords:
            if keyword.arg is None:
                continue
            if isinstance(properties, dict) and keyword.arg not in properties \
                    and not accepts_extra:
                expected = _listing(list(properties)) or "no arguments"
                self._add(keyword, f"{label} has no argument {keyword.arg!r} "
                                   f"(expected: {expected})")
            given.add(keyword.arg)
        if has_star_args or has_star_kwargs:
            return
        for required in spec.parameters.get("required", []):
            if required not in given:
                self._add(node, f"{label} is missing required argument {required!r}")

    def _check_literals(self, label: str, node: ast.Call, positional: tuple[str, ...],
                        properties: dict[str, Any]) -> None:
        """Literal arguments of a validated call that its schema refuses whatever the
        run does."""
        passed = [(name, arg) for name, arg in zip(positional, node.args, strict=False)]
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            passed = []
        passed += [(keyword.arg, keyword.value) for keyword in node.keywords
                   if keyword.arg is not None]
        for name, value in passed:
            mismatch = literal_mismatch(value, properties.get(name))
            if mismatch is not None:
                self._add(value, f"{label} argument {name!r} must be {mismatch}")

    def _add(self, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        lines = self.plan.lines
        if 0 < line <= len(lines):
            col = len(lines[line - 1].encode()[:col].decode(errors="ignore"))
        self.problems.append(Problem(line, col + 1, message, kind="CheckError"))


def _is_namespace_access(node: ast.Attribute) -> bool:
    """``math.sqrt``, ``json.dumps``: members of the helper modules, however they are named
    (``import math as m``)."""
    return any(node.attr in members for members in MODULE_MEMBERS.values())


def _listing(names: list[str]) -> str:
    """``names`` joined, the first :data:`_MAX_LISTED` of them."""
    if len(names) <= _MAX_LISTED:
        return ", ".join(names)
    return ", ".join(names[:_MAX_LISTED]) + f", ... ({len(names) - _MAX_LISTED} more)"


def _example_kwargs(spec: CallableSpec) -> str:
    properties = spec.parameters.get("properties") or {}
    return ", ".join(f"{key}=..." for key in list(properties)[:3]) or "..."


def _signature(func: Callable[..., Any]) -> inspect.Signature | None:
    if getattr(func, "parameters_schema", None) is not None and not inspect.isfunction(func) \
            and not inspect.ismethod(func):
        signature = getattr(func, "signature", None)
        return signature if isinstance(signature, inspect.Signature) else None
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _annotation_schema(annotation: Any) -> dict[str, Any]:
    json_type = _JSON_TYPES.get(annotation)
    if json_type:
        return {"type": json_type}
    string_format = _STRING_FORMATS.get(annotation)
    return {"type": "string", "format": string_format} if string_format else {}


def _names(names: Any) -> frozenset[str]:
    return frozenset(names) if isinstance(names, Iterable) and not isinstance(names, str) \
        else frozenset()


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n")[0]
