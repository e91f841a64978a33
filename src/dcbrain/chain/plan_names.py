"""The names a plan calls: each means one thing, and none replaces a tf_plan builtin.

A plan's names resolve in a fixed order — the tf_plan builtins, then the chains and
tools it is given — and a clash is refused rather than settled by the order of a list:
a tool that came with the wrong name (an MCP server listing ``dict`` or the user's
``get_note``) would otherwise receive calls meant for something else.
"""

from __future__ import annotations

from collections.abc import Iterable

from dcbrain.exceptions import TFChainError
from dcbrain.tfplan.checker import BUILTIN_NAMES
from dcbrain.tfplan.origins import describe_callable
from dcbrain.tools import Tool


def check_plan_names(chains: Iterable[str], tools: Iterable[Tool]) -> None:
    """Raise :class:`TFChainError` naming both sides of every clash between a builtin,
    a chain and a tool, or a tool name a plan cannot call."""
    taken: dict[str, str] = {}
    problems: list[str] = []
    for name in chains:
        taken[name] = f"chain {name!r}"
    for tool in tools:
        name, described = tool.name, describe_tool(tool)
        if name in BUILTIN_NAMES:
            problems.append(f"{described} clashes with the tf_plan builtin {name}")
        elif not name.isidentifier() or name.startswith("_"):
            problems.append(f"{described}: a plan cannot call it (a name must be an "
                            "identifier not starting with '_')")
        elif taken.get(name, "").startswith("chain "):
            problems.append(f"the name {name!r} is both a chain and a tool ({described})")
        elif name in taken:
            problems.append(f"{described} clashes with {taken[name]}")
        else:
            taken[name] = described
    if problems:
        raise TFChainError("; ".join(problems))


def describe_tool(tool: Tool) -> str:
    """``MCP server 'notes' tool 'get_note'``, or ``tool 'get_note' (function get_note in
    tools.py:3)``."""
    return describe_callable(tool.name, tool)
