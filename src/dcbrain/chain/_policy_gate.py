"""Policies checked before every chain and tool call of a plan (see :mod:`dcbrain.policies`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dcbrain.policies import (
    TRUSTED_SOURCES,
    Allow,
    Ask,
    Deny,
    Policy,
    PolicyCall,
    PolicyMode,
    Violation,
    policy_name,
    trusted_args_policy,
    vouched_arguments,
)
from dcbrain.tfplan.errors import TFPolicyDenied
from dcbrain.tfplan.labels.provenance import PLAN, CallSources, Tracking, call_sources
from dcbrain.tools import CallOptions

logger = logging.getLogger(__name__)

#: What an ``Ask`` becomes where no person can be asked.
NO_APPROVALS = "policy asks for approval; approvals are not available here"
#: The source of an argument whose labels did not reach the call.
UNKNOWN = "unknown"


def effective_mode(mode: PolicyMode | None, owners: Sequence[Any],
                   policies: Sequence[Policy]) -> PolicyMode:
    """``mode``, or when not given: ``"enforce"`` once anything declares a policy."""
    if mode is not None:
        return mode
    declared = bool(policies) or any(getattr(owner, "trusted_args", None)
                                     or getattr(owner, "policies", ()) for owner in owners)
    return "enforce" if declared else "off"


def tracking_of(mode: PolicyMode) -> Tracking:
    return {"off": "off", "enforce": "on", "strict": "strict"}[mode]  # type: ignore[return-value]


class PolicyGate:
    """The policies of one interpreter: the callee's own, then the brain's.

    ``trusted_sources`` are the sources trusted besides ``user`` and ``plan`` (trusted
    tools, ``tool:<name>``, and trusted fields, ``tool:<name>.<field>``); ``on_violation``
    is what a callee's ``trusted_args`` policy does with untrusted data unless the callee
    says (``"deny"`` or ``"ask"`` a person).
    """

    def __init__(self, mode: PolicyMode, policies: Sequence[Policy],
                 trusted_sources: Iterable[str], planner_saw: Iterable[str] = (),
                 on_violation: Violation = "deny") -> None:
        self.mode = mode
        self.policies = tuple(policies)
        self.on_violation: Violation = on_violation
        self.trusted = TRUSTED_SOURCES | frozenset(trusted_sources)
        #: Untrusted sources the planner read before it wrote this plan: its literals carry
        #: them (a planner shown an injected email may copy the attacker's IBAN).
        self.planner_saw = frozenset(planner_saw) - self.trusted

    def check(self, kind: str, name: str, owner: Any, arguments: Mapping[str, Any],
              ask: Callable[[str], Exception | None]) -> Exception | None:
        """The error a call must fail with, or ``None`` when it may run; ``ask(reason)``
        turns an :class:`Ask` into an approval request (its denial, or ``None``)."""
        # a tool's or chain's options in one read; anything else by its attributes
        declared = getattr(owner, "options", None)
        if not isinstance(declared, CallOptions):
            declared = _declared(owner)
        if self.mode == "off" or not declared.side_effects:
            return None
        own: list[Policy] = []
        # an argument a TrustedValues policy of the callee decides is left to it
        trusted_args = declared.trusted_args - vouched_arguments(declared.policies) \
            if declared.policies else declared.trusted_args
        if trusted_args:
            own.append(trusted_args_policy(trusted_args,
                                           declared.on_violation or self.on_violation))
        policies = [*own, *declared.policies, *self.policies]
        if not policies:
            return None
        sources = _by_name(owner, arguments)
        if self.planner_saw:
            sources = {argument: found | self.planner_saw if PLAN in found else found
                       for argument, found in sources.items()}
        call = PolicyCall(name, dict(arguments), sources, self.trusted, kind)
        for policy in policies:
            try:
                decision = policy(call)
            except Exception as exc:  # a broken policy refuses: it cannot vouch for the call
                logger.warning("policy %s of %s() failed", policy_name(policy), name,
                               exc_info=True)
                decision = Deny(f"policy failed: {type(exc).__name__}")
            if isinstance(decision, Allow):
                continue
            if isinstance(decision, Ask):
                error = ask(decision.reason)
                if error is None:
                    continue
                return error
            reason = decision.reason if isinstance(decision, Deny) else \
                f"policy returned {type(decision).__name__}, not Allow, Deny or Ask"
            return denial(call, policy, reason)
        return None

    def violation_of(self, owner: Any) -> Violation:
        """What a call of ``owner`` whose ``trusted_args`` carry untrusted data gets."""
        own: Violation | None = getattr(owner, "on_violation", None)
        return own or self.on_violation


def _declared(owner: Any) -> CallOptions:
    """What ``owner`` (a callee without :class:`CallOptions`) declares to the gate."""
    return CallOptions(side_effects=getattr(owner, "side_effects", True),
                       trusted_args=getattr(owner, "trusted_args", frozenset()),
                       policies=tuple(getattr(owner, "policies", ())),
                       on_violation=getattr(owner, "on_violation", None))


def denial(call: PolicyCall, policy: Policy, reason: str) -> TFPolicyDenied:
    """The error of a refused call: the policy's reason and the untrusted sources of each
    argument (the data itself never: it may be the attack)."""
    untrusted = {name: call.untrusted(name) for name in call.args if call.untrusted(name)}
    name = policy_name(policy)
    error = TFPolicyDenied(f"{call.tool}() refused by policy {name}: {reason}")
    if untrusted:
        error.argument = next(iter(untrusted))
        error.sources = tuple(untrusted[error.argument])
    error.policy = name
    return error


def ask_unavailable(reason: str) -> Exception:
    return TFPolicyDenied(f"{reason}: {NO_APPROVALS}")


def _by_name(owner: Any, arguments: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The sources of each keyword argument of the call running in this context."""
    sources: CallSources | None = call_sources.get()
    if sources is None:
        return {name: frozenset({UNKNOWN}) for name in arguments}
    signature = getattr(owner, "signature", None)
    positional = [] if signature is None else list(signature.parameters)
    return sources.bound(positional[:len(sources.args)],
                         [name for name in arguments if name not in
                          positional[:len(sources.args)]])
