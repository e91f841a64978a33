"""What the operator declares about an MCP server's tools for the injection defence.

``MCPTools(read_only=..., trusted_output=..., trusted_fields=..., trusted_args=...,
policies=...)`` gives each listed tool the ``side_effects``, ``trusted_output``,
``trusted_fields``, ``trusted_args`` and ``policies`` of a :class:`~dcbrain.tools.Tool`,
by ``fnmatch`` patterns of the server's own tool names (as
``require_approval`` and ``tool_timeout_s`` do). Trust comes from the operator only: what
the server says about its tools (``readOnlyHint`` included) neither trusts its output nor
takes a tool out of the policies' checks, since a server can say anything.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dcbrain.exceptions import TFMCPError
from dcbrain.mcp.limits import listed_names
from dcbrain.policies import Policy, checked_policies

if TYPE_CHECKING:
    from mcp.types import Tool as MCPToolInfo

#: ``MCPTools(policies=...)``: policies for every tool, or by tool-name pattern.
PolicyRules = Iterable[Policy] | Mapping[str, Iterable[Policy]]


@dataclass(frozen=True)
class ToolTrust:
    """The trust options of one tool, as :class:`~dcbrain.tools.Tool` takes them."""

    side_effects: bool
    trusted_output: bool
    trusted_fields: frozenset[str]
    trusted_args: frozenset[str]
    policies: tuple[Policy, ...]


@dataclass(frozen=True)
class TrustRules:
    """The trust declarations of one server, checked against its tool list at connect."""

    #: Patterns of the read-only tools (``None``: none).
    read_only: tuple[str, ...] | None
    trusted_output: tuple[str, ...]
    trusted_fields: tuple[tuple[str, frozenset[str]], ...]
    trusted_args: tuple[tuple[str, frozenset[str]], ...]
    #: Policies of every tool, then those by pattern.
    policies_for_all: tuple[Policy, ...]
    policies: tuple[tuple[str, tuple[Policy, ...]], ...]

    @classmethod
    def of(cls, server: str, *, read_only: bool | Iterable[str] | None,
           trusted_output: bool | Iterable[str],
           trusted_args: Mapping[str, Iterable[str]] | None,
           policies: PolicyRules,
           trusted_fields: Mapping[str, Iterable[str]] | None = None) -> TrustRules:
        """The declarations of ``MCPTools`` ``server``; ``TypeError`` for a wrong shape."""
        owner = f"MCPTools {server!r}"
        by_pattern: list[tuple[str, tuple[Policy, ...]]] = []
        for_all: tuple[Policy, ...] = ()
        if isinstance(policies, Mapping):
            by_pattern = [(_pattern(pattern, owner, "policies"),
                           checked_policies(found, f"{owner}: policies[{pattern!r}]"))
                          for pattern, found in policies.items()]
        else:
            for_all = checked_policies(policies, f"{owner}: policies")
        return cls(read_only=None if read_only is None else _patterns(read_only, owner,
                                                                       "read_only"),
                   trusted_output=_patterns(trusted_output, owner, "trusted_output"),
                   trusted_fields=_names_by_pattern(trusted_fields, owner, "trusted_fields",
                                                    "field"),
                   trusted_args=_names_by_pattern(trusted_args, owner, "trusted_args",
                                                  "argument"),
                   policies_for_all=for_all,
                   policies=tuple(by_pattern))

    def check(self, listing: Sequence[MCPToolInfo],
              require_approval: Sequence[str] = ()) -> None:
        """:class:`TFMCPError` for a declaration that would silently do nothing or undo
        another: a pattern (``require_approval``'s too) matching none of the listed tools,
        an argument its tool does not have, a tool declared read-only whose guarded
        arguments would never be checked."""
        names = [info.name for info in listing]
        declared: list[tuple[str, Iterable[str]]] = [
            ("require_approval", require_approval),
            ("read_only", self.read_only or ()), ("trusted_output", self.trusted_output),
            ("trusted_fields", (pattern for pattern, _ in self.trusted_fields)),
            ("trusted_args", (pattern for pattern, _ in self.trusted_args)),
            ("policies", (pattern for pattern, _ in self.policies))]
        for option, patterns in declared:
            for pattern in patterns:
                if pattern != "*" and not fnmatch.filter(names, pattern):
                    raise TFMCPError(f"{option}: {pattern!r} matches none of its tools "
                                     f"({listed_names(names)})")
        for info in listing:
            guarded = _names_for(info.name, self.trusted_args)
            known = set((info.input_schema or {}).get("properties") or {})
            unknown = sorted(guarded - known)
            if unknown:
                raise TFMCPError(f"trusted_args: tool {info.name!r} has no argument "
                                 f"{unknown[0]!r} (its arguments: "
                                 f"{listed_names(sorted(known))})")
            if guarded and self.read_only is not None and _matches(info.name, self.read_only):
                raise TFMCPError(f"tool {info.name!r} is declared read_only and has "
                                 "trusted_args: a read-only tool's calls are never checked")

    def of_tool(self, info: MCPToolInfo) -> ToolTrust:
        """The trust options of the listed tool ``info``."""
        name = info.name
        guarded = _names_for(name, self.trusted_args)
        fields = _names_for(name, self.trusted_fields)
        policies = self.policies_for_all + tuple(
            policy for pattern, found in self.policies if fnmatch.fnmatchcase(name, pattern)
            for policy in found)
        read_only = self.read_only is not None and _matches(name, self.read_only)
        return ToolTrust(side_effects=not read_only,
                         trusted_output=_matches(name, self.trusted_output),
                         trusted_fields=fields, trusted_args=guarded, policies=policies)

def _names_by_pattern(rules: Mapping[str, Iterable[str]] | None, owner: str, option: str,
                      what: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """``{"send_*": ["recipient"]}``: tool-name patterns and the names each declares."""
    if rules is not None and not isinstance(rules, Mapping):
        raise TypeError(f"{owner}: {option} maps tool-name patterns to {what} names "
                        f"({{\"send_*\": [\"recipient\"]}}), got {type(rules).__name__}")
    found: list[tuple[str, frozenset[str]]] = []
    for pattern, names in (rules or {}).items():
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise TypeError(f"{owner}: {option}[{pattern!r}] must be a list of {what} names, "
                            f"got {names!r}")
        found.append((_pattern(pattern, owner, option), frozenset(names)))
    return tuple(found)


def _names_for(name: str, rules: Iterable[tuple[str, frozenset[str]]]) -> frozenset[str]:
    """The names the patterns matching tool ``name`` declare, together."""
    return frozenset().union(*(names for pattern, names in rules
                               if fnmatch.fnmatchcase(name, pattern)))


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _patterns(value: bool | Iterable[str], owner: str, option: str) -> tuple[str, ...]:
    """``True`` (every tool), ``False`` (none) or a list of tool-name patterns."""
    if value is True:
        return ("*",)
    if value is False:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{owner}: {option} is True, False or a list of tool-name patterns, "
                        f"got {value!r}")
    return tuple(_pattern(pattern, owner, option) for pattern in value)


def _pattern(pattern: Any, owner: str, option: str) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise TypeError(f"{owner}: {option}: a tool-name pattern must be a non-empty string, "
                        f"got {pattern!r}")
    return pattern

