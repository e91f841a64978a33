"""The in-process run manager: the server's runs on its own loop, recorded in its store.

Every message starts a :class:`ServerRun`, driven by :func:`dcbrain.runs.execute_run` on
the one brain the server was given (the factory returns it; tests script one per run).
Its events are kept while it is live, stored and fanned out to stream readers
(:class:`~dcbrain.server.run_log.RunEventLog`); its status and result go to ``runs``.

A new message while a run of the same conversation is active supersedes that run (see
:class:`~dcbrain.runs.SupersedePolicy`). The new run starts once every earlier run of
the conversation has ended, and the old one ends with reason ``superseded``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from dcbrain.approvals import ApprovalBoard
from dcbrain.brain import RunDeps
from dcbrain.events import ApprovalDecided, ApprovalRequested, Event
from dcbrain.events import Final as FinalEvent
from dcbrain.exceptions import RunConflict, TFApprovalError
from dcbrain.exceptions import TooManyRuns as TooManyRuns
from dcbrain.memory import Memory, RunStore, StoredRun
from dcbrain.neural import Neural
from dcbrain.runs import (
    DEFAULT_SUPERSEDE_GRACE_S,
    QUEUED,
    RUNNING,
    TERMINAL_STATUSES,
    WAITING,
    RunnableBrain,
    RunOutcome,
    RunRecord,
    RunRequest,
    SupersedePolicy,
    conversations,
    end_unstarted,
    execute_run,
    final_event,
)
from dcbrain.runs.listing import RunPage, RunQuery, page_of
from dcbrain.runs.retention import prune_runs
from dcbrain.server.run_log import RunEventLog
from dcbrain.values.text import encodable

__all__ = ["DEFAULT_SUPERSEDE_GRACE_S", "BrainFactory", "RunManager", "RunnableBrain",
           "ServerRun", "TooManyRuns"]

logger = logging.getLogger("dcbrain.server")

DEFAULT_MAX_CONCURRENT_RUNS: Final = 16

BrainFactory = Callable[[], RunnableBrain]
"""The brain a run is executed on (a server has one; its factory returns it each time)."""


@dataclass(eq=False)
class ServerRun:
    """One run as the server sees it, from the message that started it to its end."""

    record: RunRecord
    request: RunRequest
    log: RunEventLog
    task: asyncio.Task[None] | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    stop_waiting: asyncio.Event = field(default_factory=asyncio.Event)
    #: The run's ``final`` event, logged once its terminal status is recorded.
    final: Event | None = None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def conversation_id(self) -> str:
        return self.request.conversation_id

    @property
    def supersedes(self) -> str | None:
        return self.record.supersedes

    @property
    def done(self) -> bool:
        return self.record.status in TERMINAL_STATUSES

    def to_dict(self) -> dict[str, Any]:
        self.record.superseded_by = self.request.superseded_by
        self.record.event_count = self.log.count
        return self.record.summary()


class RunManager:
    """Starts, supersedes, aborts and records runs; all methods run on the server's loop.

    ``store`` records runs and their events and keeps each conversation's failed
    attempts; ``memory`` (optional) keeps the question of a run superseded before it
    started in its conversation; ``neural`` is the mailbox new input is posted to.
    """

    def __init__(
        self,
        brain_factory: BrainFactory,
        store: RunStore,
        *,
        memory: Memory | None = None,
        neural: Neural | None = None,
        max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS,
        supersede_grace_s: float = DEFAULT_SUPERSEDE_GRACE_S,
    ) -> None:
        if max_concurrent_runs < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        self.policy = SupersedePolicy(supersede_grace_s)
        self.brain_factory = brain_factory
        self.store = store
        self.memory = memory
        self.neural = neural if neural is not None else Neural()
        self.max_concurrent_runs = max_concurrent_runs
        self._runs: dict[str, ServerRun] = {}  # unfinished runs (and ones still flushing)
        self._active: dict[str, ServerRun] = {}  # the newest unfinished run per conversation
        self._stopping = False
        #: Where this server's runs wait for people's decisions.
        self.approvals = ApprovalBoard()
        self._saving: set[asyncio.Future[None]] = set()

    @property
    def supersede_grace_s(self) -> float:
        return self.policy.grace_s

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> list[str]:
        """Mark runs a previous server left unfinished as ``interrupted``; returns their ids."""
        return await asyncio.to_thread(self._interrupt_stale_runs)

    def _interrupt_stale_runs(self) -> list[str]:
        stale = [r for r in self.store.list_runs() if r.status not in TERMINAL_STATUSES]
        for row in stale:
            record = RunRecord.from_stored(row)
            events = self.store.run_events(record.run_id)
            request = RunRequest(record.run_id, row.conversation_id or "", record.question or "",
                                 superseded_by=record.superseded_by,
                                 next_seq=events[-1].seq + 1 if events else 0)
            final = final_event(request, "interrupted", "server_restart")
            self.store.append_run_event(record.run_id, final.seq, final.to_dict())
            record.status, record.reason = "interrupted", "server_restart"
            record.event_count = final.seq + 1
            record.error = "the server stopped while this run was in flight"
            self.store.save_run(record.run_id, record.conversation_id, record.status,
                                record.data())
        return [row.run_id for row in stale]

    async def readiness(self) -> list[str]:
        """Runs execute in this process, on its own store: ready once serving."""
        return []

    async def stop(self) -> None:
        """Stop every run (they end ``interrupted``) and wait until they are recorded."""
        await self.stop_taking_runs()
        await self.release_in_flight()

    @property
    def in_flight(self) -> int:
        """Runs a drain waits for: not the ones waiting for a person, who may take days."""
        return sum(1 for run in self._runs.values() if run.record.status != WAITING)

    async def stop_taking_runs(self) -> None:
        self._stopping = True

    async def release_in_flight(self) -> list[str]:
        """End every unfinished run ``interrupted`` and wait until each is recorded."""
        runs = list(self._runs.values())
        for run in runs:
            if run.task is not None and not run.task.done():
                run.task.cancel()
        for run in runs:
            if run.task is None:
                continue
            try:
                await run.task
            except asyncio.CancelledError:
                pass  # how a stopped run ends; it recorded itself as interrupted
            except Exception:
                logger.exception("run %s did not stop cleanly", run.run_id)
        return [run.run_id for run in runs]

    # -- queries -----------------------------------------------------------------------

    @property
    def active_count(self) -> int:
        """Conversations with an unfinished run (what ``max_concurrent_runs`` limits)."""
        return len(self._active)

    def live(self, run_id: str) -> ServerRun | None:
        return self._runs.get(run_id)

    async def describe(self, run_id: str) -> dict[str, Any] | None:
        run = self._runs.get(run_id)
        if run is not None:
            return run.to_dict()
        row = await self.store.aget_run(run_id)
        return None if row is None else RunRecord.from_stored(row).summary()

    async def conversations(self, limit: int = 200) -> list[dict[str, Any]]:
        """Conversations that have runs, most recently started first."""
        rows = await self.store.alist_runs(limit=limit * 20)

        def live_status(run_id: str) -> str | None:
            live = self._runs.get(run_id)
            return None if live is None else live.record.status

        return conversations(rows, limit, live_status)

    async def exists(self, run_id: str) -> bool:
        return run_id in self._runs or await self.store.aget_run(run_id) is not None

    async def events(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """The run's events with ``seq > after``: stored or past ones first, then live ones.

        Ends when the run has ended and every event was yielded.
        """
        run = self._runs.get(run_id)
        if run is None:
            for stored in await self.store.arun_events(run_id, after):
                yield stored.event
            return
        async for event in run.log.follow(after):
            yield event

    # -- commands ----------------------------------------------------------------------

    async def submit(self, conversation_id: str, content: str) -> ServerRun:
        """Start a run for a new message; supersedes the conversation's active run.

        Raises :class:`TooManyRuns` when every slot is taken (a superseding message
        always gets one: it replaces a run).
        """
        if self._stopping:
            raise TooManyRuns(0, "the server is shutting down; retry when it is back")
        previous = self._active.get(conversation_id)
        if previous is None and len(self._active) >= self.max_concurrent_runs:
            raise TooManyRuns(self.max_concurrent_runs)
        run_id = uuid.uuid4().hex
        run = ServerRun(RunRecord(run_id, conversation_id, content, QUEUED),
                        RunRequest(run_id, conversation_id, content),
                        RunEventLog(self.store, run_id))
        waits_for = [r for r in self._runs.values()  # ended ones may still be storing
                     if r.conversation_id == conversation_id and not r.finished.is_set()]
        self._runs[run_id] = run
        self._active[conversation_id] = run
        if previous is not None:
            run.record.supersedes = previous.run_id
            self._supersede(previous, run)
        await self._save(run)  # stored before its id is handed out
        stored = await self.store.aget_run(run_id)
        if stored is not None:
            run.record.created_at = stored.created_at
        run.task = asyncio.create_task(self._drive(run, waits_for), name=f"run:{run_id}")
        return run

    def abort(self, run_id: str) -> ServerRun | None:
        """Ask a live run to stop; ``None`` when it is not live (unknown or finished)."""
        run = self._runs.get(run_id)
        if run is None or run.done:
            return None
        run.request.abort()
        if not run.request.started:
            run.stop_waiting.set()
        return run

    async def abort_run(self, run_id: str) -> bool:
        return self.abort(run_id) is not None

    async def list_runs(self, conversation_id: str) -> list[StoredRun]:
        return await self.store.alist_runs(conversation_id)

    async def page_runs(self, query: RunQuery) -> RunPage:
        rows = await asyncio.to_thread(self.store.page_runs, query.statuses,
                                       query.conversation_id, query.limit + 1,
                                       query.before)

        def summary(row: StoredRun) -> dict[str, Any]:
            live = self._runs.get(row.run_id)
            return live.to_dict() if live is not None else RunRecord.from_stored(row).summary()

        return page_of(rows, query, summary)

    async def resume_run(self, run_id: str, *, any_version: bool = False) -> dict[str, Any]:
        raise RunConflict("runs of this server are not durable (it executes them in its own "
                          "process): a run that stopped cannot be resumed; send the message "
                          "again")

    def prune(self, older_than_s: float) -> int:
        return prune_runs(self.store, older_than_s)

    def _supersede(self, old: ServerRun, new: ServerRun) -> None:
        if old.record.status == QUEUED:  # still waiting for an earlier run: it never starts
            old.request.superseded_by = new.run_id
            old.stop_waiting.set()
            return
        self.policy.apply(old.request, new.run_id, new.request.question, self.neural)

    # -- a run -------------------------------------------------------------------------

    async def _drive(self, run: ServerRun, waits_for: Sequence[ServerRun]) -> None:
        writer = asyncio.create_task(run.log.write(), name=f"persist:{run.run_id}")
        loop = asyncio.get_running_loop()

        def sink(event: Event) -> None:  # where the event happens (maybe a plan's thread)
            loop.call_soon_threadsafe(self._add_event, run, event)

        try:
            if await self._wait_turn(run, waits_for):
                await self._execute(run, sink)
            else:
                await self._end_unstarted(run, waits_for, sink)
        except asyncio.CancelledError:
            self._end(run, end_unstarted(
                run.request, sink, "interrupted", "server_shutdown",
                error="the server stopped while this run was in flight"))
            await self._finish(run, writer)
            raise
        except Exception as exc:  # a bug around the brain: record it, never lose the run
            logger.exception("run %s failed unexpectedly", run.run_id)
            self._end(run, end_unstarted(run.request, sink, "failed", "error",
                                         error=f"{type(exc).__name__}: {exc}"))
        await self._finish(run, writer)

    def _add_event(self, run: ServerRun, event: Event) -> None:
        """Log the event; an approval asked or decided changes the run's status.

        The ``final`` event waits for :meth:`_end`: whoever reads it reads the terminal
        status, result and event count it announces."""
        payload = event.payload
        if isinstance(payload, FinalEvent) and not run.done:
            run.final = event
            return
        run.log.add(event)
        if isinstance(payload, ApprovalRequested | ApprovalDecided) and not run.done:
            approvals = {item["call_id"]: item for item in run.record.approvals}
            if isinstance(payload, ApprovalRequested):
                approvals[payload.call_id] = {**payload.model_dump(), "decision": None}
            elif payload.call_id in approvals:
                approvals[payload.call_id]["decision"] = payload.model_dump()
            run.record.approvals = list(approvals.values())
            run.record.status = WAITING if run.record.pending_approvals else RUNNING
            saving = asyncio.ensure_future(self._save(run))
            self._saving.add(saving)
            saving.add_done_callback(self._saving.discard)

    async def decide(self, run_id: str, call_id: str, *, approved: bool, reason: str = "",
                     args_hash: str | None = None, by: str = "user") -> dict[str, Any]:
        """Decide a call a live run waits on; :class:`TFApprovalError` when it waits on
        no such call (404) or it is decided, has other arguments or the run ended (409)."""
        live = self._runs.get(run_id)
        if live is not None:
            status = live.record.status
        else:
            stored = await self.store.aget_run(run_id)
            if stored is None:
                raise TFApprovalError(f"unknown run {run_id}", status=404)
            status = stored.status
        if status in TERMINAL_STATUSES:
            raise TFApprovalError(f"run {run_id} has ended ({status}): nothing to decide",
                                  status=409)
        decision = self.approvals.decide(run_id, call_id, approved=approved, reason=reason,
                                         by=by, args_hash=args_hash)
        return decision.to_dict()

    async def _wait_turn(self, run: ServerRun, waits_for: Sequence[ServerRun]) -> bool:
        """Wait until earlier runs of the conversation ended; ``False`` if told to stop."""
        pending = [r for r in waits_for if not r.finished.is_set()]
        if pending and not run.stop_waiting.is_set():
            stop: asyncio.Future[Any] = asyncio.ensure_future(run.stop_waiting.wait())
            ended: asyncio.Future[Any] = asyncio.ensure_future(
                asyncio.gather(*(r.finished.wait() for r in pending))
            )
            try:
                await asyncio.wait({stop, ended}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                ended.cancel()
        return not run.stop_waiting.is_set()

    async def _end_unstarted(self, run: ServerRun, waits_for: Sequence[ServerRun],
                             sink: Callable[[Event], None]) -> None:
        """End a run that never started; a superseded one keeps its message, in turn."""
        self._end(run, end_unstarted(run.request, sink, "aborted", "aborted"))
        if run.request.superseded_by is None:
            return
        await self._save(run)
        if self.memory is not None:
            # The user did say it. An earlier run stores its message when it starts, so
            # this one goes in once every earlier run has ended: messages stay in order.
            await asyncio.gather(*(r.finished.wait() for r in waits_for))
            await self.memory.acommit_message(run.conversation_id, run.request.question, "user")

    async def _execute(self, run: ServerRun, sink: Callable[[Event], None]) -> None:
        brain = self.brain_factory()
        self.neural.take_user_input(run.conversation_id)  # input meant for a run that ended
        run.record.status = RUNNING
        await self._save(run)
        deps = RunDeps(run_store=self.store, mailbox=self.neural, approvals=self.approvals)
        try:
            outcome = await execute_run(brain, run.request, deps, sink)
        finally:
            await _delivered(asyncio.get_running_loop())
        self._end(run, outcome)

    def _end(self, run: ServerRun, outcome: RunOutcome) -> None:
        """Set the terminal status (the ``final`` event went to the run's log already)."""
        if run.done:
            return
        record = run.record
        record.result = outcome.result_record()
        record.error = encodable(outcome.error)
        record.reason = outcome.reason
        record.status = outcome.status
        if self._active.get(run.conversation_id) is run:  # the slot is free from now on
            del self._active[run.conversation_id]
        if run.final is not None:
            run.log.add(run.final)
            run.final = None
        run.log.notify()

    async def _finish(self, run: ServerRun, writer: asyncio.Task[None]) -> None:
        run.request.cancel_timers()
        await _delivered(asyncio.get_running_loop())
        run.log.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(writer)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._save(run))
        run.finished.set()
        self._runs.pop(run.run_id, None)

    async def _save(self, run: ServerRun) -> None:
        run.record.superseded_by = run.request.superseded_by
        run.record.event_count = max(run.log.count, run.request.next_seq)
        try:
            await self.store.asave_run(run.run_id, run.conversation_id, run.record.status,
                                       run.record.data())
        except Exception:
            logger.exception("could not store run %s", run.run_id)


async def _delivered(loop: asyncio.AbstractEventLoop) -> None:
    """Return once every event handed to the loop before this call has been recorded."""
    marker: asyncio.Future[None] = loop.create_future()
    loop.call_soon_threadsafe(marker.set_result, None)
    await marker
