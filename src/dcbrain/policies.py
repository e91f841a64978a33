"""Policies: what may reach a consequential call, decided from where its arguments came from.

A policy is a function ``policy(call: PolicyCall) -> Allow | Deny | Ask``. It runs before
every call of a tool or chain that has side effects, in a plan whose values carry their
sources (``user``, ``plan``, ``tool:<name>``, ``chain:<name>``; see
:mod:`dcbrain.tfplan.labels.provenance`). ``Tool(send_money, trusted_args=["recipient"])`` is the
built-in policy most tools need: those arguments may carry trusted sources only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: How a brain enforces policies: not at all, on data flow, or on data flow and the
#: conditions a call was made under.
PolicyMode = Literal["off", "enforce", "strict"]
POLICY_MODES: tuple[PolicyMode, ...] = ("off", "enforce", "strict")
#: What a call whose ``trusted_args`` carry untrusted data gets: refused, or put to a person
#: (an approval request naming the argument and its sources).
Violation = Literal["deny", "ask"]
VIOLATIONS: tuple[Violation, ...] = ("deny", "ask")
#: Sources every run trusts: what the person asked, and the plan's own literals.
TRUSTED_SOURCES = frozenset({"user", "plan"})


@dataclass(frozen=True)
class Allow:
    """The call may run."""


@dataclass(frozen=True)
class Deny:
    """The call must not run; ``reason`` says why (no untrusted text in it)."""

    reason: str


@dataclass(frozen=True)
class Ask:
    """A person must decide whether the call runs; ``reason`` is what they are told."""

    reason: str


Decision = Allow | Deny | Ask
Policy = Callable[["PolicyCall"], Decision]


@dataclass(frozen=True)
class PolicyCall:
    """One call as a policy sees it: the callee, its keyword arguments, their sources.

    ``trusted`` are the sources this run trusts (``user``, ``plan``, tools declared with
    ``trusted_output=True``, the application's chains as such: a chain's output also
    carries everything it read, and a chain the plan built carries what built it).
    Nothing else is trusted, whatever its name.
    """

    tool: str
    args: Mapping[str, Any]
    arg_sources: Mapping[str, frozenset[str]] = field(default_factory=dict)
    trusted: frozenset[str] = TRUSTED_SOURCES
    kind: str = "tool"

    def sources(self, name: str) -> frozenset[str]:
        """The sources of argument ``name`` (empty when the call does not pass it)."""
        return self.arg_sources.get(name, frozenset())

    def untrusted(self, name: str) -> list[str]:
        """The sources of argument ``name`` this run does not trust, sorted."""
        return sorted(source for source in self.sources(name) if not self.trusts(source))

    def is_trusted(self, name: str) -> bool:
        """Whether argument ``name`` carries trusted data only."""
        return not self.untrusted(name)

    def trusts(self, source: str) -> bool:
        return source in self.trusted


class TrustedValues:
    """A value policy: argument ``argument`` is admitted when it carries trusted data only,
    or when its value is one of those ``values`` returns (a function of the application,
    called at each check, or a fixed collection).

    The way out for a lookup keyed by untrusted data: the IBAN a bill names is refused
    by ``trusted_args``, but admitted once it is one of the IBANs of the company's own
    vendors::

        Tool(send_money, trusted_args=["recipient"],
             policies=[TrustedValues("recipient", vendor_ibans)])

    On the same tool, ``trusted_args`` leaves ``argument`` to this policy, and the static
    flow check does not refuse it (the value decides, at the call).
    """

    def __init__(self, argument: str, values: Callable[[], Iterable[Any]] | Iterable[Any],
                 ) -> None:
        if not isinstance(argument, str) or not argument:
            raise TypeError("TrustedValues: argument must be the name of an argument")
        self.argument = argument
        self.values = values
        source = getattr(values, "__name__", None) if callable(values) else None
        self.__name__ = f"trusted_values({argument}" + (f" in {source}()" if source else "") \
            + ")"

    def allowed(self) -> frozenset[Any]:
        found = self.values() if callable(self.values) else self.values
        return frozenset(value for value in found if _hashable(value))

    def __call__(self, call: PolicyCall) -> Decision:
        untrusted = call.untrusted(self.argument)
        if not untrusted:
            return Allow()
        value = call.args.get(self.argument)
        if _hashable(value) and value in self.allowed():
            return Allow()
        return Deny(f"{call.tool}(): argument {self.argument!r} gets data from "
                    f"{', '.join(untrusted)} and is not one of the trusted values; accepted: "
                    "trusted data, or a value the application lists")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def vouched_arguments(policies: Iterable[Policy]) -> frozenset[str]:
    """The arguments a :class:`TrustedValues` among ``policies`` decides."""
    return frozenset(policy.argument for policy in policies if isinstance(policy, TrustedValues))


def trusted_args_policy(names: Iterable[str], on_violation: Violation = "deny") -> Policy:
    """The policy of ``Tool(..., trusted_args=names)``: each of those arguments carries
    trusted data only; a call that breaks it is denied, or with ``on_violation="ask"`` put
    to a person. The reason says what would be accepted."""
    required = tuple(sorted(names))
    verdict = Ask if on_violation == "ask" else Deny
    # what the planner reads: the way out (a person asked is told the reason only)
    way_out = "" if on_violation == "ask" else (
        "; accepted: the user's words, the literals of a plan written without untrusted "
        "data in view, or a trusted tool's result (or a person's approval, with "
        "on_violation=\"ask\")")

    def trusted_args(call: PolicyCall) -> Decision:
        for name in required:
            untrusted = call.untrusted(name)
            if untrusted:
                return verdict(f"{call.tool}(): argument {name!r} must carry trusted data "
                               f"only (trusted_args) but gets data from "
                               f"{', '.join(untrusted)}{way_out}")
        return Allow()

    return trusted_args


def checked_policies(policies: Iterable[Policy], owner: str) -> tuple[Policy, ...]:
    """``policies`` of ``owner``, refused unless each is callable."""
    if callable(policies):
        raise TypeError(f"{owner}: policies must be a list of policy functions, got one "
                        "function: wrap it in a list")
    checked = tuple(policies)
    for policy in checked:
        if not callable(policy):
            raise TypeError(f"{owner}: a policy must be a function of a PolicyCall, got "
                            f"{type(policy).__name__}")
    return checked


def checked_mode(mode: str | None) -> PolicyMode | None:
    return _one_of(mode, POLICY_MODES, "policy_mode")  # type: ignore[return-value]


def checked_violation(on_violation: str | None, owner: str) -> Violation | None:
    return _one_of(on_violation, VIOLATIONS, f"{owner}: on_violation")  # type: ignore[return-value]


def _one_of(value: str | None, choices: tuple[str, ...], what: str) -> str | None:
    """``value`` (``None``: unset), refused unless one of ``choices``."""
    if value is not None and value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value


def policy_name(policy: Policy) -> str:
    return str(getattr(policy, "__name__", None) or type(policy).__name__)


__all__ = ["POLICY_MODES", "VIOLATIONS", "Allow", "Ask", "Decision", "Deny", "Policy",
           "PolicyCall", "PolicyMode", "TrustedValues", "Violation", "checked_mode",
           "checked_policies", "checked_violation", "trusted_args_policy", "vouched_arguments"]
