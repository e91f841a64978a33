"""Runs executed by durable workers: the server enqueues, streams, signals (``dcbrain[durable]``).

The run's record, events and status live in the durable store, so any API node answers
for any run. A new message of a conversation with a live run supersedes it: a run still
queued, or stranded (no worker of its version is left), ends at once
(``aborted``/``superseded``, and DBOS never starts it); a running one
gets a control message and the worker running it stops it. The messages of a conversation
are taken one at a time (per API node), and each is added to the conversation as it is
taken, whether or not its run ever starts. The queue runs one run per
conversation at a time, so the new run starts after the old one's final event.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from dcbrain.durable import DurableEngine, DurableStore, EventHub
from dcbrain.durable.approvals import approvals_of, decide, deny_expired
from dcbrain.durable.journal import record_question_kept
from dcbrain.events import Event
from dcbrain.exceptions import RunConflict, TooManyRuns
from dcbrain.memory import Memory, StoredRun
from dcbrain.runs import (
    LIVE_STATUSES,
    QUEUED,
    RUNNING,
    STRANDED,
    WAITING,
    RunRecord,
    RunRequest,
    conversations,
    end_unstarted,
)
from dcbrain.runs.listing import RunPage, RunQuery, page_of
from dcbrain.runs.retention import prune_runs
from dcbrain.telemetry import submission_traceparent

logger = logging.getLogger("dcbrain.server")

_LIVE = LIVE_STATUSES
#: Live runs no worker executes: the API node ends them itself (and DBOS never runs them).
_NOT_EXECUTING = (QUEUED, WAITING, STRANDED)
#: How often (seconds) an API node denies approval requests nobody decided in time.
APPROVAL_SWEEP_S = 5.0
#: How often (seconds) the conversations counted active are checked for runs that ended
#: (only while there are some: an idle node reads nothing).
ACTIVE_REFRESH_S = 1.0


@dataclass(frozen=True)
class DurableSubmittedRun:
    run_id: str
    conversation_id: str
    supersedes: str | None


class DurableRuns:
    """:class:`~dcbrain.server.service.RunService` over a :class:`DurableEngine`."""

    def __init__(self, engine: DurableEngine, store: DurableStore, hub: EventHub, *,
                 memory: Memory | None = None, max_concurrent_runs: int | None = None,
                 approval_sweep_s: float = APPROVAL_SWEEP_S) -> None:
        """``memory`` keeps the conversations (the one the workers' brains use): each
        message goes in when it is taken, so one superseded before it ran is kept too.
        Every ``approval_sweep_s`` seconds, requests nobody decided in time are denied.

        ``max_concurrent_runs`` caps the conversations with a live run this node accepted
        (429 beyond) when this process executes them; ``None`` (an API node): runs wait in
        the queue for a worker, whose ``--concurrency`` is the limit.
        """
        if max_concurrent_runs is not None and max_concurrent_runs < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        self.engine = engine
        self.store = store
        self.hub = hub
        self.max_concurrent_runs = max_concurrent_runs
        self.memory = memory
        self._active: set[str] = set()  # conversations with a live run submitted here
        self._submitted: set[str] = set()  # ... since the last refresh began
        self._submitting: dict[str, asyncio.Lock] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        self.approval_sweep_s = approval_sweep_s

    @property
    def active_count(self) -> int:
        """Conversations with a live run submitted here (``/v1/health``'s ``active_runs``,
        ``dcbrain_runs_active``): a run that ended anywhere leaves it within
        :data:`ACTIVE_REFRESH_S`."""
        return len(self._active)

    async def start(self) -> list[str]:
        self._sweeper = asyncio.create_task(self._deny_expired_approvals(),
                                            name="approval timeouts")
        self._refresher = asyncio.create_task(self._forget_ended(), name="active runs")
        previous = self.store.on_append
        wake = self.hub.wake

        def on_append(run_id: str) -> None:
            if previous is not None:
                previous(run_id)
            wake(run_id)

        self.store.on_append = on_append
        await asyncio.to_thread(functools.partial(self.engine.start, wait_for_queue=False))
        await self.hub.start()
        return []

    async def readiness(self) -> list[str]:
        return await asyncio.to_thread(self.engine.readiness)

    async def stop(self) -> None:
        for task in (self._sweeper, self._refresher):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.hub.close()
        await asyncio.to_thread(self.engine.stop)

    @property
    def in_flight(self) -> int:
        return len(self.engine.in_flight())

    async def stop_taking_runs(self) -> None:
        await asyncio.to_thread(self.engine.stop_taking_runs)

    async def release_in_flight(self) -> list[str]:
        # Nothing to do: a workflow left running stays pending, and DBOS resumes it at
        # this node's next start (or a live peer once this node's heartbeat is stale).
        return self.engine.in_flight()

    # -- commands ------------------------------------------------------------------------

    async def submit(self, conversation_id: str, content: str) -> DurableSubmittedRun:
        # One message of a conversation at a time: each supersedes the one before it.
        lock = self._submitting.setdefault(conversation_id, asyncio.Lock())
        try:
            async with lock:
                return await self._submit(conversation_id, content)
        finally:
            if not lock.locked() and self._submitting.get(conversation_id) is lock:
                del self._submitting[conversation_id]

    async def _submit(self, conversation_id: str, content: str) -> DurableSubmittedRun:
        live = [r for r in await asyncio.to_thread(self.store.list_runs, conversation_id, 50)
                if r.status in _LIVE]
        await self._refresh_active()
        if (not live and self.max_concurrent_runs is not None
                and len(self._active) >= self.max_concurrent_runs):
            raise TooManyRuns(self.max_concurrent_runs)
        # a run superseded already (still in its grace) stays superseded by its first successor
        live = [r for r in live if not r.data.get("superseded_by")]
        run_id = uuid.uuid4().hex
        supersedes = live[0].run_id if live else None
        data = {"question": content, "supersedes": supersedes,
                "traceparent": submission_traceparent(run_id, conversation_id)}
        await asyncio.to_thread(self.store.save_run, run_id, conversation_id, QUEUED, data)
        if self.memory is not None:
            await self.memory.acommit_message(conversation_id, content, "user")
            await asyncio.to_thread(record_question_kept, self.store, run_id)
        for old in live:
            await asyncio.to_thread(self._supersede, old, run_id, content)
        await asyncio.to_thread(self.engine.enqueue, run_id, conversation_id, content)
        self._active.add(conversation_id)
        self._submitted.add(conversation_id)
        return DurableSubmittedRun(run_id, conversation_id, supersedes)

    def _supersede(self, old: StoredRun, by: str, text: str) -> None:
        ended = self._end_here(old.run_id, {"reason": "superseded", "superseded_by": by},
                               superseded_by=by)
        if ended is not None:  # not executing anywhere: ended here
            self.engine.cancel(old.run_id, ended.workflow_id)
            return
        # Running (or just claimed by a worker): recorded first, so a recovered run sees it.
        if self.store.update_run(old.run_id, RUNNING, {"superseded_by": by},
                                 only_from=(RUNNING,)) is not None:
            self.engine.send({"op": "supersede", "run_id": old.run_id, "by": by, "text": text})

    async def abort_run(self, run_id: str) -> bool:
        return await asyncio.to_thread(self._abort, run_id)

    def _abort(self, run_id: str) -> bool:
        ended = self._end_here(run_id, {"reason": "aborted"})
        if ended is not None:  # not executing anywhere: ended here
            self.engine.cancel(run_id, ended.workflow_id)
            return True
        if self.store.update_run(run_id, RUNNING, {"abort_requested": True},
                                 only_from=(RUNNING,)) is None:
            return False
        self.engine.send({"op": "abort", "run_id": run_id})
        return True

    async def resume_run(self, run_id: str, *, any_version: bool = False) -> dict[str, Any]:
        return await asyncio.to_thread(self._resume, run_id, any_version)

    def _resume(self, run_id: str, any_version: bool) -> dict[str, Any]:
        record = self.store.get_run(run_id)
        if record is None:
            raise RunConflict(f"no run {run_id!r}")
        if record.status not in _LIVE:
            raise RunConflict(f"run {run_id} has ended ({record.status}): there is nothing to "
                              "resume; send the message again for a new run")
        if record.status == WAITING:
            raise RunConflict(f"run {run_id} waits for decisions on its calls (POST "
                              f"/v1/runs/{run_id}/approvals/CALL_ID): it goes on once they "
                              "are decided")
        resumed = self.engine.resume(run_id, any_version=any_version)
        return {"run_id": run_id, "status": resumed.status,
                "resumed_from_version": resumed.data.get("resumed_from_version"),
                "resumed_under_version": resumed.data.get("resumed_under_version")}

    def prune(self, older_than_s: float) -> int:
        return prune_runs(self.store, older_than_s, forget_workflows=self.engine.forget)

    def _end_here(self, run_id: str, changes: dict[str, Any],
                  superseded_by: str | None = None) -> StoredRun | None:
        """Abort a run no worker executes (``None`` when it is executing or ended): its
        status and event count first, then its ``final`` (said as superseded when
        ``superseded_by``), so a reader of the ``final`` reads the terminal record."""
        stored = self.store.events(run_id)
        next_seq = int(stored[-1]["seq"]) + 1 if stored else 0
        ended = self.store.update_run(run_id, "aborted",
                                      {**changes, "event_count": next_seq + 1},
                                      only_from=_NOT_EXECUTING)
        if ended is None:
            return None
        request = RunRequest(run_id, ended.conversation_id or "",
                             str(ended.data.get("question", "")), superseded_by=superseded_by,
                             next_seq=next_seq)

        def store(event: Event) -> None:
            self.store.append_events(run_id, [event.to_dict()])

        end_unstarted(request, store, "aborted", "aborted")
        return ended

    async def _refresh_active(self) -> None:
        if not self._active:
            return
        checked = set(self._active)
        self._submitted = set()
        ended: set[str] = set()
        for cid in checked:
            runs = await asyncio.to_thread(self.store.list_runs, cid, 5)
            if not any(r.status in _LIVE for r in runs):
                ended.add(cid)
        self._active -= ended - self._submitted  # one submitted again meanwhile stays

    async def _forget_ended(self) -> None:
        while True:
            await asyncio.sleep(ACTIVE_REFRESH_S)
            try:
                await self._refresh_active()
            except Exception:  # the store is away: next time
                logger.debug("could not refresh the active runs", exc_info=True)

    # -- queries -------------------------------------------------------------------------

    async def describe(self, run_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._describe, run_id)

    def _describe(self, run_id: str) -> dict[str, Any] | None:
        record = self.store.get_run(run_id)
        if record is None:
            return None
        summary = RunRecord.from_stored(record).summary()
        summary["approvals"] = approvals_of(self.store, record)
        return summary

    async def decide(self, run_id: str, call_id: str, *, approved: bool, reason: str = "",
                     args_hash: str | None = None, by: str = "user") -> dict[str, Any]:
        decision = await asyncio.to_thread(
            decide, self.store, self.engine.enqueue, run_id, call_id, approved=approved,
            reason=reason, by=by, args_hash=args_hash)
        return decision.to_dict()

    async def _deny_expired_approvals(self) -> None:
        """Deny, every ``approval_sweep_s``, what nobody decided in time (any API node may:
        a call is decided once)."""
        while True:
            await asyncio.sleep(self.approval_sweep_s)
            try:
                await asyncio.to_thread(deny_expired, self.store, self.engine.enqueue)
            except Exception:  # the store is away: next time
                logger.warning("could not deny expired approvals", exc_info=True)

    async def exists(self, run_id: str) -> bool:
        return await asyncio.to_thread(self.store.get_run, run_id) is not None

    async def list_runs(self, conversation_id: str) -> list[StoredRun]:
        return await asyncio.to_thread(self.store.list_runs, conversation_id)

    async def page_runs(self, query: RunQuery) -> RunPage:
        rows = await asyncio.to_thread(self.store.page_runs, query.statuses,
                                       query.conversation_id, query.limit + 1, query.before)
        return page_of(rows, query, lambda row: RunRecord.from_stored(row).summary())

    async def conversations(self, limit: int = 200) -> list[dict[str, Any]]:
        rows = await asyncio.to_thread(self.store.list_runs, None, limit * 20)
        return conversations(rows, limit)

    async def events(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        # A run's final event is stored with its terminal status (or after it, when this
        # node ends a run no worker executes): the record is terminal once it is read.
        async for event in self.hub.follow(run_id, after):
            yield event
