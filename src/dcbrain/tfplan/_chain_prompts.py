"""Calls of a plan's own chains that leave out what their prompts name (static check).

``helper = __construct_chain(prompt="Summarize {{ text }}")`` then ``helper(input=t)``
renders a prompt without ``text``: an error the run would only meet at the call. A name
bound once to ``__construct_chain(...)`` with a literal ``prompt`` (and
``system_prompt``) is held to it: each call must pass every name the prompts substitute,
except ``input`` (the call's text) and the names every chain call already has.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence

from dcbrain.tfplan.parser import walk

#: ``{{ name }}``, ``{{ name.field }}``, ``{{ name | tojson }}``: the name substituted.
_SUBSTITUTION = re.compile(r"\{\{-?\s*([A-Za-z_][A-Za-z0-9_]*)(?:\.\w+|\[[^\]{}]*\])*"
                           r"\s*(?:\|\s*\w+\s*)*-?\}\}")
_ALWAYS = frozenset({"input", "current_input"})


def prompt_argument_problems(tree: ast.Module, available: Iterable[str] = (),
                             nodes: Sequence[ast.AST] | None = None
                             ) -> list[tuple[ast.AST, str]]:
    """``(call, message)`` for each call of a plan-built chain that does not pass a name
    its prompt substitutes; names in ``available`` every call has already. ``nodes`` are
    those of ``walk(tree)`` when the caller has them already."""
    nodes = list(walk(tree)) if nodes is None else nodes
    if not _may_build_chains(nodes):
        return []
    given = _ALWAYS | frozenset(available)
    bound: dict[str, list[ast.AST]] = {}
    for node in nodes:
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr):
            targets = [node.target]
        elif isinstance(node, ast.FunctionDef | ast.Lambda):
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                        arguments.vararg, arguments.kwarg):
                if arg is not None:
                    bound.setdefault(arg.arg, []).append(node)
            if isinstance(node, ast.FunctionDef):
                bound.setdefault(node.name, []).append(node)
        for target in targets:
            for part in walk(target):
                if isinstance(part, ast.Name):
                    bound.setdefault(part.id, []).append(node)
    chains: dict[str, tuple[int, frozenset[str]]] = {}
    for name, bindings in bound.items():
        if len(bindings) != 1 or not isinstance(bindings[0], ast.Assign):
            continue
        assign = bindings[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
            continue
        names = _substituted(assign.value)
        if names is not None:
            chains[name] = (assign.lineno, names - given)
    problems: list[tuple[ast.AST, str]] = []
    for node in nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) \
                or node.func.id not in chains:
            continue
        if node.args or any(keyword.arg is None for keyword in node.keywords):
            continue  # ``**data``: what it passes is known at run time only
        line, names = chains[node.func.id]
        missing = sorted(names - {keyword.arg for keyword in node.keywords
                                  if keyword.arg is not None})
        if missing:
            listed = ", ".join("{{ " + name + " }}" for name in missing)
            problems.append((node, f"the prompt of {node.func.id!r} (built at line {line}) "
                                   f"substitutes {listed}, which this call does not pass: "
                                   f"call it as {node.func.id}({missing[0]}=...)"))
    return problems


def _may_build_chains(nodes: Iterable[ast.AST]) -> bool:
    """Whether ``nodes`` have a ``__construct_chain(...)`` call: only such a call builds a
    chain whose prompt is checked (a plain ASCII source without the name has none)."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id == "__construct_chain" for node in nodes)


def _substituted(value: ast.AST) -> frozenset[str] | None:
    """The names a literal ``__construct_chain(prompt=..., system_prompt=...)`` substitutes
    (``None``: not such a call, or a prompt computed at run time)."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name) \
            or value.func.id != "__construct_chain":
        return None
    names: set[str] = set()
    for keyword in value.keywords:
        if keyword.arg is None:
            return None
        if keyword.arg in ("prompt", "system_prompt"):
            if not isinstance(keyword.value, ast.Constant) \
                    or not isinstance(keyword.value.value, str):
                return None
            template = keyword.value.value
            found = _SUBSTITUTION.findall(template)
            if "{%" in template or "{#" in template or len(found) != template.count("{{"):
                return None  # template code: refused when the chain is built
            names.update(found)
    return frozenset(names)
