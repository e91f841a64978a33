"""What a plan interpreter is made of: the constant part, :class:`PlanCallables` (the
chains and tools, their specs, limits, isolation and policies: built once per brain), and
the part of one run, :class:`RunScope` (journal, approval gate, announcer, attempt,
mailbox, the run's input). :meth:`TFChainInterpreter.of` puts the two together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dcbrain.chain._announce import PlanCallObserver
from dcbrain.chain._policy_gate import PolicyGate, effective_mode
from dcbrain.chain.approval_gate import ApprovalGate
from dcbrain.chain.call_pipeline import ChainCallable, ToolCallable
from dcbrain.chain.chain import Chain
from dcbrain.chain.construct import CONSTRUCT_CHAIN_SPEC
from dcbrain.chain.containers import Chains
from dcbrain.chain.plan_names import check_plan_names
from dcbrain.exceptions import TFChainError
from dcbrain.journal import CallJournal
from dcbrain.llm.base import ChatLLM
from dcbrain.messages import TextMessage
from dcbrain.policies import (
    Policy,
    PolicyMode,
    Violation,
    checked_mode,
    checked_policies,
    checked_violation,
    vouched_arguments,
)
from dcbrain.tfplan import CallableSpec, Limits
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool, as_tool

_OWNER = "TFChainInterpreter"


class PlanCallables:
    """The chains and tools plans call, with everything about them that no run changes:
    their specs (computed once), the policy mode, the trusted sources, limits and
    isolation. Checked when made (names, types, policies)."""

    def __init__(
        self,
        chains_map: Mapping[str, Chain | Chains],
        *,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        limits: Limits | None = None,
        default_llm: ChatLLM | None = None,
        isolation: Isolation = "process",
        policies: Sequence[Policy] = (),
        policy_mode: PolicyMode | None = None,
        flow_check: bool = True,
        on_violation: Violation = "deny",
    ) -> None:
        self.chains_map: dict[str, Chain | Chains] = dict(chains_map)
        for name, chain in self.chains_map.items():
            if not isinstance(chain, Chain | Chains):
                raise TFChainError(f"chains_map[{name!r}]: expected Chain or Chains, got "
                                   f"{type(chain).__name__}")
        self.tools: list[Tool] = [as_tool(item) for item in tools]
        check_plan_names(self.chains_map, self.tools)
        self.limits = limits
        #: The limits every plan runs under (the defaults without ``limits``), made once.
        self.run_limits: Limits = limits if limits is not None else Limits()
        self.default_llm = default_llm
        self.isolation: Isolation = isolation
        self.flow_check = flow_check
        self.mode: PolicyMode = effective_mode(checked_mode(policy_mode),
                                               [*self.chains_map.values(), *self.tools],
                                               policies)
        self.policies = checked_policies(policies, _OWNER)
        self.on_violation: Violation = checked_violation(on_violation, _OWNER) or "deny"
        self.trusted_fields: dict[str, frozenset[str]] = {
            tool.name: tool.trusted_fields for tool in self.tools if tool.trusted_fields}
        trusted = [f"tool:{tool.name}" for tool in self.tools if tool.trusted_output]
        trusted += [f"tool:{name}.{item}" for name, names in self.trusted_fields.items()
                    for item in names]
        # the application's chains as such (their output carries what they read)
        trusted += [f"chain:{name}" for name in self.chains_map]
        self.trusted_sources: tuple[str, ...] = tuple(trusted)
        self.sources: dict[str, str] = {
            **{name: f"chain:{name}" for name in self.chains_map},
            **{tool.name: f"tool:{tool.name}" for tool in self.tools}}
        self._specs: dict[str, CallableSpec] | None = None
        self._checked: dict[str, CallableSpec] | None = None

    def policy_gate(self, planner_saw: Iterable[str] = ()) -> PolicyGate:
        """The policies of one run, whose planner had read ``planner_saw``."""
        return PolicyGate(self.mode, self.policies, self.trusted_sources, planner_saw,
                          self.on_violation)

    # -- specs -------------------------------------------------------------------------
    @property
    def base_specs(self) -> dict[str, CallableSpec]:
        """The spec of every chain and tool as declared (computed once)."""
        if self._specs is None:
            specs: dict[str, CallableSpec] = {}
            described: list[tuple[str, Any]] = [
                *((name, ChainCallable(None, name, chain))
                  for name, chain in self.chains_map.items()),
                *((tool.name, ToolCallable(None, tool)) for tool in self.tools)]
            for name, func in described:
                # the description is the chain's/tool's own, even when empty
                specs[name] = dataclasses.replace(CallableSpec.from_callable(name, func),
                                                  description=getattr(func, "description",
                                                                      ""))
            self._specs = specs
        return self._specs

    @property
    def chain_arguments(self) -> frozenset[str]:
        """The chains' required arguments: those ``additional_info`` may give instead
        (:meth:`specs` makes them optional); nothing else of it changes a spec."""
        names = self.__dict__.get("_chain_arguments")
        if names is None:
            names = frozenset(
                name for spec in self.base_specs.values() if spec.kind == "chain"
                and isinstance(required := spec.parameters.get("required"), list)
                for name in required)
            self.__dict__["_chain_arguments"] = names
        return names

    def specs(self, additional_info: Mapping[str, Any]) -> dict[str, CallableSpec]:
        """The specs planners see: a chain's arguments already in ``additional_info``
        are optional."""
        return {name: _relaxed(spec, additional_info) if spec.kind == "chain" else spec
                for name, spec in self.base_specs.items()}

    def checked_specs(self, additional_info: Mapping[str, Any]) -> dict[str, CallableSpec]:
        """What the checker holds plans to: the chains and tools, and ``__construct_chain``.
        A tool whose untrusted arguments go to a person is no static error."""
        if self._checked is None:
            specs = dict(self.base_specs)
            gate = self.policy_gate()
            for tool in self.tools:
                if tool.trusted_args and gate.violation_of(tool) == "ask":
                    specs[tool.name] = dataclasses.replace(specs[tool.name],
                                                           trusted_args=frozenset())
                elif vouched_arguments(tool.policies) & tool.trusted_args:  # the value decides
                    specs[tool.name] = dataclasses.replace(
                        specs[tool.name],
                        trusted_args=tool.trusted_args - vouched_arguments(tool.policies))
            specs[CONSTRUCT_CHAIN_SPEC.name] = CONSTRUCT_CHAIN_SPEC
            self._checked = specs
        return {name: _relaxed(spec, additional_info) if spec.kind == "chain" else spec
                for name, spec in self._checked.items()}

    def describe(self, additional_info: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
        """Name, kind, description, input and output schema of each chain and tool, with
        its trust declarations, its docstring's ``Returns:`` and its example result."""
        return [
            {
                "name": spec.name,
                "kind": spec.kind,
                "description": spec.description,
                "input_schema": spec.parameters,
                "output_schema": spec.returns,
                "side_effects": spec.side_effects,
                "trusted_output": spec.trusted_output,
                "trusted_args": sorted(spec.trusted_args),
                "trusted_fields": sorted(spec.trusted_fields),
                "returns_doc": spec.returns_doc,
                "example": spec.example,
            }
            for spec in self.specs(additional_info or {}).values()
        ]


@dataclass
class RunScope:
    """What one run (one plan attempt) gives the interpreter: the chains' input
    ``additional_info`` (used by reference), the conversation and knowledge, the call
    ``observer``, the mailbox (``neural``, with ``conversation_id``), the ``journal``
    with the ``attempt`` and ``run_id``, the ``approvals`` gate, the untrusted sources
    the planner had read and the run's abort flag (``stop_asked``)."""

    additional_info: dict[str, Any] | None = None
    conversation: list[TextMessage] | None = None
    knowledge: list[Any] | None = None
    observer: PlanCallObserver | None = None
    neural: Any | None = None
    conversation_id: str | None = None
    journal: CallJournal | None = None
    attempt: int = 0
    run_id: str | None = None
    approvals: ApprovalGate | None = None
    planner_saw: Iterable[str] = field(default=())
    stop_asked: Callable[[], bool] | None = None


def _relaxed(spec: CallableSpec, additional_info: Mapping[str, Any]) -> CallableSpec:
    required = spec.parameters.get("required")
    if not isinstance(required, list) or not additional_info:
        return spec
    remaining = [name for name in required if name not in additional_info]
    if len(remaining) == len(required):
        return spec
    parameters = {**spec.parameters, "required": remaining}
    if not remaining:
        del parameters["required"]
    return dataclasses.replace(spec, parameters=parameters)
