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
    # a description reads the function's file path: made only for a refusal (this runs
    # for every plan)
    taken: dict[str, str | Tool] = {}
    problems: list[str] = []
    for name in chains:
        taken[name] = f"chain {name!r}"
    for tool in tools:
        name = tool.name
        if name in BUILTIN_NAMES:
            problems.append(f"{describe_tool(tool)} clashes with the tf_plan builtin {name}")
        elif not name.isidentifier() or name.startswith("_"):
            problems.append(f"{describe_tool(tool)}: a plan cannot call it (a name must be an "
                            "identifier not starting with '_')")
        elif isinstance(taken.get(name), str):
            problems.append(f"the name {name!r} is both a chain and a tool "
                            f"({describe_tool(tool)})")
        elif name in taken:
            earlier = taken[name]
            assert isinstance(earlier, Tool)
            problems.append(f"{describe_tool(tool)} clashes with {describe_tool(earlier)}")
        else:
            taken[name] = tool
    if problems:
        raise TFChainError("; ".join(problems))


def describe_tool(tool: Tool) -> str:
    """``MCP server 'notes' tool 'get_note'``, or ``tool 'get_note' (function get_note in
    tools.py:3)``."""
    return describe_callable(tool.name, tool)
