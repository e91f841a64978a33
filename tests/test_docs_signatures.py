"""The public signatures written in docs/*.md are the code's: names, order, defaults.

A documented signature is a call in a ```python block whose arguments are bare names
(required parameters), ``name=default`` (a literal or an UPPER_CASE constant) and
``**name``; each public callable listed below must be documented so, once, exactly.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dcbrain import Chain, DCBrain, Tool, tool

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: Where each public signature is documented: (file, the call's text, the callable).
DOCUMENTED: list[tuple[str, str, Callable[..., Any]]] = [
    ("brain.md", "DCBrain", DCBrain),
    ("chains.md", "Chain", Chain),
    ("chains.md", "chain.run", Chain.run),
    ("chains.md", "chain.as_tool", Chain.as_tool),
    ("chains.md", "Tool", Tool),
    ("chains.md", "tool", tool),
]

_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")


def python_blocks(doc: str) -> list[str]:
    return [textwrap.dedent(match.group(2)) for match in _BLOCK.finditer(doc)]


def is_default(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return bool(_CONSTANT.fullmatch(node.id))
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def documented_signatures(doc: str, callee: str) -> list[ast.Call]:
    """The signature-shaped calls of ``callee`` in the doc's Python blocks."""
    found = []
    for block in python_blocks(doc):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        for statement in tree.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if not isinstance(call, ast.Call) or ast.unparse(call.func) != callee:
                continue
            if all(isinstance(arg, ast.Name) for arg in call.args) and all(
                    keyword.arg is None or is_default(keyword.value)
                    for keyword in call.keywords):
                found.append(call)
    return found


def as_documented(call: ast.Call) -> list[tuple[str, str | None]]:
    """``(name, default source)`` per parameter; ``None`` for a required one."""
    parameters: list[tuple[str, str | None]] = [
        (arg.id, None) for arg in call.args if isinstance(arg, ast.Name)]
    for keyword in call.keywords:
        if keyword.arg is None:
            assert isinstance(keyword.value, ast.Name)
            parameters.append((f"**{keyword.value.id}", None))
        else:
            parameters.append((keyword.arg, ast.unparse(keyword.value)))
    return parameters


def in_code(func: Callable[..., Any]) -> list[tuple[str, Any]]:
    """``(name, default)`` per parameter (``inspect.Parameter.empty``: required)."""
    parameters: list[tuple[str, Any]] = []
    for parameter in inspect.signature(func).parameters.values():
        if parameter.name == "self" or parameter.kind is parameter.VAR_POSITIONAL:
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            parameters.append((f"**{parameter.name}", parameter.empty))
        else:
            parameters.append((parameter.name, parameter.default))
    return parameters


def same_default(documented: str, actual: Any) -> bool:
    if _CONSTANT.fullmatch(documented):
        return actual is not inspect.Parameter.empty  # a named constant: its value is the code's
    return bool(ast.literal_eval(documented) == actual)


@pytest.mark.parametrize(("doc", "callee", "func"), DOCUMENTED,
                         ids=[callee for _, callee, _ in DOCUMENTED])
def test_a_documented_signature_matches_the_code(
    doc: str, callee: str, func: Callable[..., Any]
) -> None:
    signatures = documented_signatures((DOCS / doc).read_text(), callee)
    assert len(signatures) == 1, f"docs/{doc}: {callee}(...) is documented {len(signatures)} times"
    documented, actual = as_documented(signatures[0]), in_code(func)
    assert [name for name, _ in documented] == [name for name, _ in actual], \
        f"docs/{doc}: the parameters of {callee}(...) are not the code's"
    for (name, default), (_, real) in zip(documented, actual, strict=True):
        if name.startswith("**"):
            continue
        if default is None:
            assert real is inspect.Parameter.empty, f"docs/{doc}: {callee}: {name} has a default"
        else:
            assert same_default(default, real), \
                f"docs/{doc}: {callee}: {name}={default}, the code says {real!r}"


def test_the_parameter_table_of_dcbrain_lists_its_parameters_in_order() -> None:
    text = (DOCS / "brain.md").read_text().split("## Parameters", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE)
    assert rows == [name for name, _ in in_code(DCBrain)]


def test_a_signature_that_drifted_is_caught() -> None:
    stale = "```python\nTool(func, name=None, reuse=False)\n```\n"
    documented = as_documented(documented_signatures(stale, "Tool")[0])
    assert [name for name, _ in documented] != [name for name, _ in in_code(Tool)]
