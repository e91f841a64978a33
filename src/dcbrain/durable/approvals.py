"""Human approval of durable runs: a waiting run holds no worker, and survives anything.

When a durable run's plan reaches calls that need a person's decision, its requests go to
the run's record (``approvals``) and the execution ends (:class:`RunSuspended`): the
worker records the run as ``waiting`` and its DBOS workflow finishes, so the run holds no
queue slot, thread, sandbox worker or connection while it waits — for days, across any
restart. A decision, taken on any node, is a journal row of the run
(``approval|<call_id>``: the first write wins, so a call is decided once); when the last
request is decided the run is queued again under a new workflow id
(``<run_id>~<execution>``) and any worker executes it from its journal: finished calls
are answered by it, the approved call runs.

A request nobody decides by its ``expires_at`` is denied (``approval timed out``) by
:func:`deny_expired`, which API nodes run periodically.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from dcbrain.approvals import (
    BY_TIMEOUT,
    TIMED_OUT,
    ApprovalDecision,
    ApprovalRequest,
    decision_for,
)
from dcbrain.durable.journal import RunJournal
from dcbrain.durable.store import DurableStore
from dcbrain.exceptions import RunSuspended, TFApprovalError
from dcbrain.memory import StoredRun
from dcbrain.memory.run_store import PREVIOUS_WORKFLOW_ID, WORKFLOW_ID
from dcbrain.runs import QUEUED, RUNNING, WAITING

logger = logging.getLogger("dcbrain.durable")

#: Queues a run again: ``(run_id, conversation_id, question, workflow_id)``.
Requeue = Callable[[str, str, str, str], None]
#: The separator of a run id and its execution in a continuation's workflow id.
EXECUTION_SEPARATOR = "~"


def run_id_of(workflow_id: str) -> str:
    """The run a workflow executes: its id up to the execution number, if any."""
    return workflow_id.split(EXECUTION_SEPARATOR, 1)[0]


class StoredApprovals:
    """The approval desk of one durable run executing here (see the module docs)."""

    def __init__(self, store: DurableStore, journal: RunJournal) -> None:
        self.store = store
        self.journal = journal

    async def decisions(self, run_id: str) -> Sequence[ApprovalDecision]:
        return list(self.journal.approvals)

    async def open(self, run_id: str, requests: Sequence[ApprovalRequest]) -> None:
        await asyncio.to_thread(self._open, run_id, requests)

    def _open(self, run_id: str, requests: Sequence[ApprovalRequest]) -> None:
        record = self.store.get_run(run_id)
        known = list(record.data.get("approvals") or []) if record is not None else []
        asked = {item.get("call_id") for item in known}
        known += [{**request.to_dict(), "decision": None} for request in requests
                  if request.call_id not in asked]
        self.store.update_run(run_id, RUNNING, {"approvals": known}, only_from=(RUNNING,))

    async def wait(self, run_id: str, requests: Sequence[ApprovalRequest], *,
                   clock: Callable[[], float]) -> Sequence[ApprovalDecision]:
        raise RunSuspended(run_id)


def stored_decisions(store: DurableStore, run_id: str) -> dict[str, ApprovalDecision]:
    """The decisions taken on the run's requests, by call id (the journal's rows)."""
    return {row["decision"]["call_id"]: ApprovalDecision.from_dict(row["decision"])
            for row in store.journal(run_id) if row.get("type") == "approval"}


def approvals_of(store: DurableStore, record: StoredRun) -> list[dict[str, Any]]:
    """The run's requests, each with its decision (``None`` while it waits)."""
    items = list(record.data.get("approvals") or [])
    if not items:
        return []
    decided = stored_decisions(store, record.run_id)
    return [{**item, "decision": decided[item["call_id"]].to_dict()
             if item.get("call_id") in decided else None} for item in items]


def decide(store: DurableStore, requeue: Requeue, run_id: str, call_id: str, *,
           approved: bool, reason: str = "", by: str = "user",
           args_hash: str | None = None) -> ApprovalDecision:
    """Record a decision on the request ``call_id`` of ``run_id``; queue the run again
    once none is left. :class:`TFApprovalError` 404 for an unknown run or call, 409 for a
    call already decided, other arguments, or a run that ended."""
    record = store.get_run(run_id)
    if record is None:
        raise TFApprovalError(f"unknown run {run_id}", status=404)
    request = next((ApprovalRequest.from_dict(item)
                    for item in record.data.get("approvals") or []
                    if item.get("call_id") == call_id), None)
    if request is None:
        raise TFApprovalError(f"run {run_id} waits for no decision on call {call_id}",
                              status=404)
    if call_id in stored_decisions(store, run_id):
        raise TFApprovalError(f"call {call_id} of run {run_id} is already decided", status=409)
    if record.status not in (WAITING, RUNNING):
        raise TFApprovalError(f"run {run_id} has ended ({record.status}): nothing to decide",
                              status=409)
    decision = decision_for(request, approved=approved, reason=reason, by=by,
                            args_hash=args_hash)
    if not store.record_journal(run_id, f"approval|{call_id}",
                                {"type": "approval", "decision": decision.to_dict()}):
        raise TFApprovalError(f"call {call_id} of run {run_id} is already decided", status=409)
    requeue_if_decided(store, requeue, run_id)
    return decision


def requeue_if_decided(store: DurableStore, requeue: Requeue, run_id: str) -> bool:
    """Queue a waiting run whose every request is decided; ``True`` if this call did.

    Both the node taking the last decision and the worker recording ``waiting`` call it
    (a decision may land before the status does): the compare-and-set lets one win.
    """
    record = store.get_run(run_id)
    if record is None or record.status != WAITING:
        return False
    decided = stored_decisions(store, run_id)
    if any(item.get("call_id") not in decided for item in record.data.get("approvals") or []):
        return False
    execution = record.executions or 1
    workflow_id = f"{run_id}{EXECUTION_SEPARATOR}{execution + 1}"
    previous = record.workflow_id  # its version goes on
    if store.update_run(run_id, QUEUED, {WORKFLOW_ID: workflow_id,
                                         PREVIOUS_WORKFLOW_ID: previous},
                        only_from=(WAITING,)) is None:
        return False
    requeue(run_id, record.conversation_id or "", str(record.data.get("question", "")),
            workflow_id)
    return True


def deny_expired(store: DurableStore, requeue: Requeue, *, now: float | None = None,
                 limit: int = 1000) -> int:
    """Deny every request of a waiting run past its ``expires_at``; how many it denied."""
    now = time.time() if now is None else now
    denied = 0
    for record in store.page_runs((WAITING,), None, limit):
        for item in approvals_of(store, record):
            if item["decision"] is None and float(item.get("expires_at") or 0) <= now:
                try:
                    decide(store, requeue, record.run_id, item["call_id"], approved=False,
                           reason=TIMED_OUT, by=BY_TIMEOUT)
                    denied += 1
                except TFApprovalError:
                    pass  # decided meanwhile, on another node
    return denied


__all__ = ["EXECUTION_SEPARATOR", "Requeue", "StoredApprovals", "approvals_of", "decide",
           "deny_expired", "requeue_if_decided", "run_id_of", "stored_decisions"]
