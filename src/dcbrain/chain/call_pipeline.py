"""The stages every chain and tool call of a plan goes through, in this order::

    journal ─► policy ─► approval ─► announce ─┬─ replayed entry: its result
                                               ├─ denied: the denial
                                               └─ trace ─► deadline/retry ─► invoke ─► journal

Each stage is a small function of the call's :class:`CallSite` (what one plan run holds:
its journal, policy gate, approval gate and announcer); a callable picks its invoke stage
once, when it is made (sync or async, with or without retries), so a call allocates no
stage of its own. The deadline is the tool's ``timeout_s``, kept by the tool itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from dcbrain.chain._announce import CallAnnouncer
from dcbrain.chain._journaling import PlanJournal, replayed
from dcbrain.chain._plan_scope import PlanScope
from dcbrain.chain._policy_gate import PolicyGate, ask_unavailable
from dcbrain.chain._retrying import JournaledTries
from dcbrain.chain.approval_gate import ApprovalGate, approval_reason
from dcbrain.events import PlanCallKind
from dcbrain.journal import JournalEntry, JournalKey
from dcbrain.llm.observe import llm_observer
from dcbrain.tfplan import CallRecord
from dcbrain.tfplan.errors import TFApprovalDenied, TFPolicyDenied
from dcbrain.tools import Tool, needs_approval

if TYPE_CHECKING:
    from dcbrain.chain.chain import Chain
    from dcbrain.chain.containers import Chains


class CallSite(Protocol):
    """What the stages of a call read: the plan run's journal, gates and announcer."""

    _journal: PlanJournal
    _policies: PolicyGate
    _approvals: ApprovalGate | None
    _announcer: CallAnnouncer | None

    def _scope(self) -> PlanScope: ...


# -- the stages --------------------------------------------------------------------------

def journal_stage(site: CallSite, name: str, arguments: Mapping[str, Any], reuse: bool
                  ) -> tuple[JournalKey | None, JournalEntry | None]:
    """This call's journal key and the entry that already answers it, if any."""
    return site._journal.find(site._scope().counter, name, arguments, reuse=reuse)


def policy_stage(site: CallSite, kind: PlanCallKind, name: str, owner: Any,
                 arguments: Mapping[str, Any], key: JournalKey | None) -> Exception | None:
    """The policies' refusal of the call, or ``None``; a policy's ``Ask`` goes to the
    approval gate (or, without one, fails the call)."""
    gate = site._policies
    if gate.mode == "off" or not getattr(owner, "side_effects", True):
        return None  # what the gate would say, without making ``ask``

    def ask(reason: str) -> Exception | None:
        if site._approvals is None:
            return ask_unavailable(reason)
        return request_stage(site, site._approvals, kind, name, owner, arguments, key,
                             f"a policy asks: {reason}")

    refused = gate.check(kind, name, owner, arguments, ask)
    if refused is not None and isinstance(refused, TFPolicyDenied) \
            and site._announcer is not None:
        site._announcer.policy_denied(kind, name, refused)
    return refused


def approval_stage(site: CallSite, kind: PlanCallKind, name: str, owner: Any,
                   arguments: Mapping[str, Any], key: JournalKey | None) -> Exception | None:
    """The denial of a call declared ``requires_approval`` (or ``None``: it may run); a
    call waiting for a decision raises :class:`ApprovalRequired` (unannounced)."""
    if not needs_approval(owner, arguments):
        return None
    if site._approvals is None:
        return TFApprovalDenied(
            f"{name}() requires a person's approval, and this plan has nobody to ask "
            "(run it in a DCBrain, or give TFChainInterpreter approvals=...)")
    return request_stage(site, site._approvals, kind, name, owner, arguments, key,
                         approval_reason(kind, name, owner.requires_approval))


def request_stage(site: CallSite, gate: ApprovalGate, kind: PlanCallKind, name: str,
                  owner: Any, arguments: Mapping[str, Any], key: JournalKey | None,
                  why: str) -> Exception | None:
    """The approval gate's answer for the call this thread is entering."""
    record = site._announcer.pending() if site._announcer is not None else None
    return gate.check(name, kind, arguments, key, record=record, why=why,
                      timeout_s=getattr(owner, "approval_timeout_s", None))


def gate_stage(site: CallSite, kind: PlanCallKind, name: str, owner: Any,
               arguments: Mapping[str, Any], key: JournalKey | None) -> Exception | None:
    """Whether the call may run: ``None``, or the denial to raise once it is announced.
    Policies decide first (their ``Ask`` is a request for approval), then approval."""
    refused = policy_stage(site, kind, name, owner, arguments, key)
    if refused is not None:
        return refused
    return approval_stage(site, kind, name, owner, arguments, key)


def announce_stage(site: CallSite, kind: PlanCallKind, key: JournalKey | None,
                   entry: JournalEntry | None) -> CallRecord | None:
    """Announce the call this thread is entering; its trace record, if observed."""
    if entry is not None:
        site._scope().count_reused()
    if site._announcer is None:
        return None
    return site._announcer.announce(
        kind, reused=entry is not None, path=key.path if key is not None else "")


def trace_stage(site: CallSite, record: CallRecord | None) -> AbstractContextManager[None]:
    """Where the call ``record`` runs, its spans nest under its own."""
    if site._announcer is None:
        return nullcontext()
    return site._announcer.traced(record)


async def in_scope(site: CallSite, awaitable: Awaitable[Any], record: CallRecord | None) -> Any:
    """Await an async call with the plan's LLM usage collector in place, traced."""
    token = llm_observer.set(site._scope().collector)
    try:
        with trace_stage(site, record):
            return await awaitable
    finally:
        llm_observer.reset(token)


# -- invoke stages: one of them per tool, picked when its callable is made ---------------

#: Runs a tool call that may run: traced, journaled, tried again as its policy says.
Invoke = Callable[[CallSite, Tool, JournalKey | None, CallRecord | None, dict[str, Any]], Any]


def invoke_sync(site: CallSite, tool: Tool, key: JournalKey | None,
                record: CallRecord | None, arguments: dict[str, Any]) -> Any:
    with trace_stage(site, record):
        return site._journal.call(key, "tool", lambda: tool.call(**arguments))


def invoke_async(site: CallSite, tool: Tool, key: JournalKey | None,
                 record: CallRecord | None, arguments: dict[str, Any]) -> Any:
    return in_scope(site, site._journal.acall(key, "tool", tool.acall(**arguments)), record)


def invoke_sync_retrying(site: CallSite, tool: Tool, key: JournalKey | None,
                         record: CallRecord | None, arguments: dict[str, Any]) -> Any:
    tries = JournaledTries(site._journal, key, "tool", site._announcer, record)
    policy = tool.retry
    assert policy is not None
    with trace_stage(site, record):
        return site._journal.call(
            key, "tool", lambda: tries.call(policy, lambda: tool.call(**arguments)))


def invoke_async_retrying(site: CallSite, tool: Tool, key: JournalKey | None,
                          record: CallRecord | None, arguments: dict[str, Any]) -> Any:
    tries = JournaledTries(site._journal, key, "tool", site._announcer, record)
    policy = tool.retry
    assert policy is not None
    return in_scope(site, site._journal.acall(
        key, "tool", tries.acall(policy, lambda: tool.acall(**arguments))), record)


def invoker_for(tool: Tool) -> Invoke:
    """The invoke stage of ``tool``'s calls."""
    if tool.retry is None:
        return invoke_async if tool.is_async else invoke_sync
    return invoke_async_retrying if tool.is_async else invoke_sync_retrying


# -- the callables a plan calls ----------------------------------------------------------

class ChainCallable:
    """A chain as the plan interpreter sees it: keyword arguments in, str or dict out."""

    callable_kind = "chain"

    def __init__(self, owner: Any, name: str, chain: Chain | Chains,
                 journal_name: str | None = None) -> None:
        self.owner = owner
        self.name = name
        self.chain = chain
        # a built chain's calls are known by its definition, not only its name
        self.journal_name = journal_name or name

    @property
    def description(self) -> str:
        return self.chain.description

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return self.chain.input_schema

    @property
    def returns_schema(self) -> dict[str, Any]:
        return self.chain.output_schema

    def __call__(self, **kwargs: Any) -> Any:
        return self.owner._call_chain(self, kwargs)

    def __repr__(self) -> str:
        return f"<chain {self.name}>"


class ToolCallable:
    """A tool as the plan interpreter sees it; sync tools run in the plan's thread.

    A call goes through the stages of this module: journal, gate (policies, approval),
    announce, then the tool's invoke stage (picked here, once)."""

    callable_kind = "tool"

    def __init__(self, owner: CallSite | None, tool: Tool) -> None:
        self.owner = owner
        self.tool = tool
        self.name = tool.name
        self.description = tool.description
        self.parameters_schema = tool.parameters_schema
        self.returns_schema = tool.returns_schema
        self.signature = tool.signature
        self.side_effects = tool.side_effects
        self.trusted_output = tool.trusted_output
        self.trusted_fields = tool.trusted_fields
        self.trusted_args = tool.trusted_args
        self.returns_doc = tool.returns_doc
        self.example = tool.example
        self._reuse = tool.reuse
        self._invoke = invoker_for(tool)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        site = self.owner
        assert site is not None, "a tool's spec is not callable"
        tool = self.tool
        arguments = tool.keyword_arguments(args, kwargs)
        key, entry = journal_stage(site, self.name, arguments, self._reuse)
        denied = gate_stage(site, "tool", self.name, tool, arguments, key) \
            if entry is None else None
        record = announce_stage(site, "tool", key, entry)
        if entry is not None:
            return replayed(entry)
        if denied is not None:
            raise denied
        return self._invoke(site, tool, key, record, arguments)

    def __repr__(self) -> str:
        return f"<tool {self.name}>"
