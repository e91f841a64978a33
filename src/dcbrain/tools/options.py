"""How a plan's calls of one tool or chain are made: :class:`CallOptions`, and the checks of
each option (approval rules, deadlines, trust declarations) every layer of configuration
applies the same way."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dcbrain.exceptions import TFToolError
from dcbrain.policies import Policy, Violation, checked_policies, checked_violation
from dcbrain.retries import RetryPolicy

if TYPE_CHECKING:
    from dcbrain.tools.tool import Tool

T = typing.TypeVar("T")


#: ``requires_approval``: always, never, or when a predicate of the call's keyword
#: arguments says so.
ApprovalRule = bool | Callable[[dict[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class CallOptions:
    """How a plan's calls of one tool or chain are made: journal ``reuse``, the deadline
    ``timeout_s``, the ``retry`` policy, ``requires_approval`` (and the
    ``approval_timeout_s`` of its wait), and the trust declarations and ``policies`` the
    policy gate reads (see :class:`~dcbrain.tools.Tool`)."""

    reuse: bool = True
    timeout_s: float | None = None
    retry: RetryPolicy | None = None
    requires_approval: ApprovalRule = False
    approval_timeout_s: float | None = None
    side_effects: bool = True
    trusted_output: bool = False
    trusted_fields: frozenset[str] = frozenset()
    trusted_args: frozenset[str] = frozenset()
    policies: tuple[Policy, ...] = ()
    on_violation: Violation | None = None

    @classmethod
    def of(cls, owner: str, **given: Any) -> CallOptions:
        """The options ``given`` (the keywords of this class), checked for ``owner``
        (``"tool 'x'"``); refused ones raise :class:`TypeError`/:class:`ValueError`."""
        return cls().merged(owner, **given)

    def merged(self, owner: str, **given: Any) -> CallOptions:
        """These options with the ones ``given`` and not ``None`` in their place, checked
        (the one rule every layer of configuration follows)."""
        changes: dict[str, Any] = {}
        for name, value in given.items():
            if value is None:
                continue
            if name == "requires_approval":
                value = checked_approval_rule(value, owner)
            elif name in ("timeout_s", "approval_timeout_s"):
                value = checked_timeout(value, owner, name)
            elif name in ("side_effects", "trusted_output", "reuse"):
                value = bool(value)
            elif name in ("trusted_args", "trusted_fields"):
                value = names_of(value, owner, name)
            elif name == "policies":
                value = checked_policies(value, owner)
            elif name == "on_violation":
                value = checked_violation(value, owner)
            elif name != "retry":
                raise TypeError(f"{owner}: unknown call option {name!r}")
            changes[name] = value
        return dataclasses.replace(self, **changes) if changes else self


def option(name: str, doc: str = "") -> property:
    """An attribute of a tool or chain that reads (and sets) its ``options.<name>``."""

    def get(self: Any) -> Any:
        return getattr(self.options, name)

    def set_(self: Any, value: Any) -> None:
        self.options = dataclasses.replace(self.options, **{name: value})

    return property(get, set_, doc=doc or f"``options.{name}``")


def set_call_rules(tool: Tool, name: str, requires_approval: ApprovalRule,
                   approval_timeout_s: float | None, side_effects: bool,
                   trusted_output: bool, trusted_args: Iterable[str],
                   policies: Iterable[Policy] = (),
                   on_violation: Violation | None = None,
                   trusted_fields: Iterable[str] = ()) -> None:
    """Check and set the approval and trust options of ``tool`` (named ``name``)."""
    tool.options = tool.options.merged(
        f"tool {name!r}", requires_approval=requires_approval,
        approval_timeout_s=approval_timeout_s, side_effects=side_effects,
        trusted_output=trusted_output, trusted_args=trusted_args, policies=policies,
        on_violation=on_violation, trusted_fields=trusted_fields)
    if approval_timeout_s is None:
        tool.options = dataclasses.replace(tool.options, approval_timeout_s=None)
    if on_violation is None:
        tool.options = dataclasses.replace(tool.options, on_violation=None)


def names_of(names: Iterable[str], owner: str, option: str) -> frozenset[str]:
    """``names`` of a tool's ``option`` (argument or field names), refused unless a list of
    non-empty strings."""
    if isinstance(names, str):
        raise TypeError(f"{owner}: {option} must be a list of names, got the string {names!r}")
    found = frozenset(names)
    for name in found:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{owner}: {option} must be a list of names, got {name!r} in it")
    return found


def checked_approval_rule(rule: ApprovalRule, owner: str) -> ApprovalRule:
    """``requires_approval`` of a tool or chain, refused unless a bool or a predicate."""
    if not isinstance(rule, bool) and not callable(rule):
        raise TypeError(f"{owner}: requires_approval must be True, False or a predicate of "
                        f"the call's arguments, got {type(rule).__name__}")
    return rule


def needs_approval(owner: Any, arguments: Mapping[str, Any]) -> bool:
    """Whether a call of ``owner`` (a tool or chain) with these keyword arguments waits for
    a person's decision; raises :class:`TFToolError` when its predicate fails."""
    rule = getattr(owner, "requires_approval", False)
    if rule is True or rule is False:
        return rule
    try:
        return bool(rule(dict(arguments)))
    except Exception as exc:
        raise TFToolError(f"{owner.name!r}: its requires_approval predicate failed: "
                          f"{type(exc).__name__}: {exc}") from None


def checked_timeout(timeout_s: float | None, owner: str,
                    option: str = "timeout_s") -> float | None:
    """``timeout_s`` of a tool or chain, refused unless ``None`` or a positive number."""
    if timeout_s is None:
        return None
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) \
            or not timeout_s > 0:
        raise ValueError(f"{owner}: {option} must be a positive number of seconds, "
                         f"got {timeout_s!r}")
    return float(timeout_s)


async def within_timeout(awaitable: Awaitable[T], timeout_s: float,
                         timed_out: Callable[[], BaseException]) -> T:
    """Await ``awaitable``, cancelled after ``timeout_s`` seconds with ``timed_out()``
    raised instead (a ``TimeoutError`` of the awaitable's own passes as it is)."""
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise timed_out() from None
        raise
