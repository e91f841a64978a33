"""Prompt templates: compiled, their variables found, rendered, and checked.

Jinja2 templates compile in a sandbox with ``StrictUndefined``; f-string templates are
rendered by :class:`DataFormatter`, which allows only named variables and dict/list
lookups. A template written by a plan may only substitute values
(:func:`check_substitutions_only`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NoReturn

import jinja2
import jinja2.meta
from jinja2.sandbox import SandboxedEnvironment

from dcbrain.exceptions import TFChainError, TFPromptVariableError
from dcbrain.values.jsonsafe import dumps

# Jinja2


def _finalize(value: Any) -> Any:
    return dumps(value) if isinstance(value, dict | list) else value


_ENVIRONMENT = SandboxedEnvironment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
    finalize=_finalize,
)


# Compiled once per template text: brains and chains are built often (one per server run),
# and a compiled template renders concurrently without shared state.
@lru_cache(maxsize=512)
def compile_jinja(template: str) -> jinja2.Template:
    try:
        compiled = _ENVIRONMENT.from_string(template)
    except jinja2.TemplateSyntaxError as exc:
        raise TFChainError(
            f"prompt template has a Jinja2 syntax error at line {exc.lineno}: {exc.message}"
        ) from None
    # its globals (the environment's, never changed) as one dict: every render copies them,
    # and copying the ChainMap Jinja2 keeps them in costs more than the rest of a short render
    compiled.globals = dict(compiled.globals)
    return compiled


@lru_cache(maxsize=512)
def jinja_variables(template: str) -> frozenset[str]:
    names = jinja2.meta.find_undeclared_variables(_ENVIRONMENT.parse(template))
    return frozenset(names - set(_ENVIRONMENT.globals))


# f-string

_FIELD_PART = re.compile(r"\.([^.\[]+)|\[([^\]]+)\]")


def fstring_variables(template: str) -> frozenset[str]:
    names: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TFChainError(f"prompt template is not a valid f-string template: {exc}") from None
    for _literal, field_name, spec, _conversion in parsed:
        if field_name is None:
            continue
        root = _field_root(field_name)
        if not root.isidentifier():
            raise TFChainError(
                f"prompt template field {{{field_name}}} must start with a variable name"
            )
        names.add(root)
        if spec:
            names |= fstring_variables(spec)
    return frozenset(names)


def _field_root(field_name: str) -> str:
    match = re.match(r"[^.\[]*", field_name)
    return match.group(0) if match else ""


class DataFormatter(string.Formatter):
    """``str.format`` limited to named variables and dict/list lookups."""

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        root = _field_root(field_name)
        if root not in kwargs:
            available = ", ".join(sorted(name for name in kwargs if not name.startswith("__")))
            raise TFPromptVariableError(
                f"prompt template: {root!r} is undefined (available: {available or 'none'})"
            )
        value = kwargs[root]
        rest = field_name[len(root) :]
        position = 0
        for match in _FIELD_PART.finditer(rest):
            if match.start() != position:
                break
            position = match.end()
            key = match.group(1) if match.group(1) is not None else match.group(2)
            value = _lookup(value, key, field_name)
        if position != len(rest):
            raise TFChainError(f"prompt template field {{{field_name}}} is malformed")
        return value, root

    def format_field(self, value: Any, format_spec: str) -> Any:
        if isinstance(value, dict | list) and not format_spec:
            return dumps(value)
        return super().format_field(value, format_spec)


def _lookup(value: Any, key: str, field_name: str) -> Any:
    if isinstance(value, Mapping):
        if key in value:
            return value[key]
    elif isinstance(value, list | tuple) and re.fullmatch(r"-?\d+", key):
        index = int(key)
        if -len(value) <= index < len(value):
            return value[index]
    raise TFPromptVariableError(f"prompt template: {{{field_name}}} is undefined: no {key!r}")


# Templates written by plans: values are substituted, no template code runs.

#: Filters a plan's template may apply: linear in their input and without arguments
#: (``default`` takes one constant).
PLAN_TEMPLATE_FILTERS = frozenset({
    "tojson", "upper", "lower", "title", "capitalize", "trim", "length", "first", "last",
    "string", "default",
})


def check_substitutions_only(template: str, origin: str) -> None:
    """Refuse ``template`` unless it only substitutes values (``{{ name }}``, ``{{ a.b }}``,
    ``{{ a["k"] }}``, ``{{ a | tojson }}``).

    A plan may be written by a prompt-injected model, and Jinja's sandbox does not bound
    time or memory (nested loops, ``"x" * 10**9``): a plan computes in the plan, where every
    operation is charged, and hands the template only values.
    """
    try:
        tree = _ENVIRONMENT.parse(template)
    except jinja2.TemplateSyntaxError as exc:
        raise TFChainError(f"{origin}: Jinja2 syntax error at line {exc.lineno}: "
                           f"{exc.message}") from None
    for statement in tree.body:
        if not isinstance(statement, jinja2.nodes.Output):
            _refuse_template_code(origin, statement)
        for node in statement.nodes:
            if not isinstance(node, jinja2.nodes.TemplateData):
                _check_substitution(node, origin)


def _check_substitution(node: jinja2.nodes.Node, origin: str) -> None:
    nodes = jinja2.nodes
    if isinstance(node, nodes.Name | nodes.Const):
        return
    if isinstance(node, nodes.Getattr):
        _check_substitution(node.node, origin)
        return
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
        _check_substitution(node.node, origin)
        return
    if isinstance(node, nodes.Filter) and node.node is not None \
            and node.name in PLAN_TEMPLATE_FILTERS and not node.kwargs \
            and node.dyn_args is None and node.dyn_kwargs is None \
            and (not node.args or (node.name == "default" and len(node.args) == 1
                                   and isinstance(node.args[0], nodes.Const))):
        _check_substitution(node.node, origin)
        return
    _refuse_template_code(origin, node)


def _refuse_template_code(origin: str, node: jinja2.nodes.Node) -> NoReturn:
    raise TFChainError(
        f"{origin}: line {node.lineno}: a template from a plan may only substitute values "
        f"({{{{ name }}}}, {{{{ name.field }}}}, {{{{ name['key'] }}}}, {{{{ name | tojson }}}}; "
        f"filters: {', '.join(sorted(PLAN_TEMPLATE_FILTERS))}), found {type(node).__name__}: "
        "build the text in the plan and pass it as a value"
    )
