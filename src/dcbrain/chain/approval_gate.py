"""The approval gate of a run's plans: which calls may run, which wait, which are denied.

A :class:`~dcbrain.chain.TFChainInterpreter` with a gate asks it before every call of a
tool or chain declared ``requires_approval`` that its journal does not answer. The gate
holds the run's decisions: a call approved runs; a call denied raises
:class:`~dcbrain.tfplan.TFApprovalDenied` at its plan line; a call nobody decided yet
becomes an :class:`~dcbrain.approvals.ApprovalRequest` and stops the plan
(:class:`~dcbrain.exceptions.ApprovalRequired`) once its running branches got as far as
they can. A decision also answers the same call made again by a replan (same branch,
name, arguments and occurrence: :func:`~dcbrain.approvals.approval_call_key`): approved,
it is not asked again; denied, it is denied at once. It never answers a call with other
arguments, nor a second call with the same ones: one approval is one call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from dcbrain.approvals import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    MAX_PENDING_PER_RUN,
    ApprovalDecision,
    ApprovalRequest,
    approval_call_id,
    approval_call_key,
    args_hash,
    shown_arguments,
)
from dcbrain.exceptions import ApprovalRequired
from dcbrain.journal import JournalKey
from dcbrain.tfplan import CallRecord
from dcbrain.tfplan.errors import TFApprovalDenied


class ApprovalGate:
    """The decisions of one run, and the requests its current plan made.

    ``timeout_s`` is how long a request waits unless its tool says otherwise.
    """

    def __init__(self, decisions: Iterable[ApprovalDecision] = (), *,
                 timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._by_id: dict[str, ApprovalDecision] = {}
        self._by_call: dict[str, ApprovalDecision] = {}
        self._pending: dict[str, ApprovalRequest] = {}
        for decision in decisions:
            self.add(decision)

    def add(self, decision: ApprovalDecision) -> None:
        """Hold ``decision`` for its call, and for the same call made again in the run."""
        with self._lock:
            self._by_id[decision.call_id] = decision
            if decision.call_key:
                self._by_call[decision.call_key] = decision

    @property
    def decided(self) -> list[ApprovalDecision]:
        with self._lock:
            return list(self._by_id.values())

    def take_pending(self) -> list[ApprovalRequest]:
        """The requests the last plan made, in the order it made them (cleared)."""
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        return pending

    def check(self, name: str, kind: str, arguments: Mapping[str, Any],
              key: JournalKey | None, *, why: str, record: CallRecord | None = None,
              timeout_s: float | None = None) -> TFApprovalDenied | None:
        """Let the call run (``None``), give the denial to raise once it is announced, or
        raise :class:`ApprovalRequired` after recording its request."""
        digest = args_hash(arguments)
        call_id = approval_call_id(key) if key is not None else f"ap-{name}-{digest[:20]}"
        call_key = approval_call_key(key) if key is not None else ""
        with self._lock:
            decision = self._by_id.get(call_id)
            if decision is None or decision.args_hash != digest:
                decision = self._by_call.get(call_key) if call_key else None
            if decision is not None and decision.args_hash != digest:
                decision = None
            if decision is None and call_id not in self._pending \
                    and len(self._pending) >= MAX_PENDING_PER_RUN:
                return TFApprovalDenied(
                    f"{name}() was not run: this plan reached more calls needing a "
                    f"person's approval than a run may wait for (at most "
                    f"{MAX_PENDING_PER_RUN} decisions at a time): make fewer such calls "
                    "in one plan")
            if decision is None:
                self._pending[call_id] = ApprovalRequest(
                    call_id=call_id, tool=name, kind=kind,
                    arguments=shown_arguments(arguments), args_hash=digest,
                    line=record.line if record is not None else 0,
                    col=record.col if record is not None else 0, why=why,
                    timeout_s=timeout_s if timeout_s is not None else self.timeout_s,
                    call_key=call_key)
        if decision is None:
            raise ApprovalRequired(f"{name}() waits for a person's approval")
        if decision.approved:
            return None
        return TFApprovalDenied(f"{name}() was not run: {decision.denial()}")


def approval_reason(kind: str, name: str, rule: Any) -> str:
    """Why a call of ``name`` needs approval, as the person deciding reads it."""
    what = "chain" if kind == "chain" else "tool"
    if rule is True:
        return f"the {what} {name!r} requires approval for every call"
    return f"the {what} {name!r} requires approval for calls like this one"


__all__ = ["ApprovalGate", "approval_reason"]
