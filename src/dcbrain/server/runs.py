"""The run manager: one brain per run, its events live and in SQLite, supersede and abort.

Every message starts a :class:`ServerRun`. Its brain's events are numbered in order
(``seq``), kept in memory while the run is live, fanned out to stream readers and
appended to the store's ``run_events``; the run's status and result go to ``runs``.

A new message while a run of the same conversation is active supersedes that run: the
new input is posted on the brain's :class:`~dcbrain.neural.Neural`, so the run stops with
:class:`~dcbrain.exceptions.TFUserNewInputError` at its next safe point (the new-input rule); if it
has not stopped after ``supersede_grace_s`` it is aborted. The new run starts once every
earlier run of the conversation has ended, and the old one ends with reason
``superseded``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from dcbrain._text import encodable
from dcbrain.brain import BrainResult
from dcbrain.events import Event, EventType
from dcbrain.exceptions import TFBrainError, TFUserNewInputError
from dcbrain.exceptions import TooManyRuns as TooManyRuns
from dcbrain.memory import Memory, RunRecord, RunStore
from dcbrain.neural import Neural

logger = logging.getLogger("dcbrain.server")

#: Statuses a run can have; the last four are terminal.
QUEUED: Final = "queued"
RUNNING: Final = "running"
TERMINAL_STATUSES: Final = frozenset({"succeeded", "failed", "aborted", "interrupted"})

DEFAULT_MAX_CONCURRENT_RUNS: Final = 16
DEFAULT_SUPERSEDE_GRACE_S: Final = 5.0


class RunnableBrain(Protocol):
    """What the server needs of a brain: :class:`~dcbrain.brain.DCBrain` is one."""

    @property
    def neural(self) -> Neural | None: ...

    def connect_to_neural(self, neural: Neural) -> None: ...

    async def async_run(
        self,
        question: str,
        conversation_id: str = ...,
        *,
        on_event: Callable[[Event], None] | None = ...,
        run_id: str | None = ...,
    ) -> BrainResult: ...

    def abort(self, run_id: str | None = ...) -> bool: ...


BrainFactory = Callable[[], RunnableBrain]
"""Builds a fresh brain for each run (a brain runs one question at a time)."""


@dataclass(eq=False)
class ServerRun:
    """One run as the server sees it, from the message that started it to its end."""

    run_id: str
    conversation_id: str
    question: str
    created_at: float = field(default_factory=time.time)
    status: str = QUEUED
    reason: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)  # stored, so visible
    pending: list[dict[str, Any]] = field(default_factory=list)  # numbered, not stored yet
    next_seq: int = 0
    last_type: str | None = None
    sealed: bool = False  # every event is stored and visible; no more will come
    abort_requested: bool = False
    brain: RunnableBrain | None = None
    task: asyncio.Task[None] | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    stop_waiting: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    has_pending: asyncio.Event = field(default_factory=asyncio.Event)
    closing: bool = False
    grace_timer: asyncio.TimerHandle | None = None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def data(self) -> dict[str, Any]:
        """What the store keeps beside the status."""
        return {
            "question": self.question,
            "reason": self.reason,
            "result": self.result,
            "error": self.error,
            "superseded_by": self.superseded_by,
            "supersedes": self.supersedes,
            "event_count": self.next_seq,
        }

    def to_dict(self) -> dict[str, Any]:
        return run_summary(self.run_id, self.conversation_id, self.status, self.data(),
                           self.created_at, time.time())


def run_summary(
    run_id: str,
    conversation_id: str | None,
    status: str,
    data: dict[str, Any],
    created_at: float,
    updated_at: float,
) -> dict[str, Any]:
    """The public shape of a run, the same for live and stored runs."""
    return {
        "run_id": run_id,
        "conversation_id": conversation_id,
        "status": status,
        "reason": data.get("reason"),
        "question": data.get("question"),
        "result": data.get("result"),
        "error": data.get("error"),
        "superseded_by": data.get("superseded_by"),
        "supersedes": data.get("supersedes"),
        "event_count": data.get("event_count", 0),
        "created_at": created_at,
        "updated_at": updated_at,
    }


def record_summary(record: RunRecord) -> dict[str, Any]:
    return run_summary(record.run_id, record.conversation_id, record.status, record.data,
                       record.created_at, record.updated_at)


class RunManager:
    """Starts, supersedes, aborts and records runs; all methods run on the server's loop.

    ``store`` records runs and their events; ``memory`` (optional) keeps the question of a
    run superseded before it started in its conversation.
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
        if supersede_grace_s < 0:
            raise ValueError("supersede_grace_s must be >= 0")
        self.brain_factory = brain_factory
        self.store = store
        self.memory = memory
        self.neural = neural if neural is not None else Neural()
        self.max_concurrent_runs = max_concurrent_runs
        self.supersede_grace_s = supersede_grace_s
        self._runs: dict[str, ServerRun] = {}  # unfinished runs (and ones still flushing)
        self._active: dict[str, ServerRun] = {}  # the newest unfinished run per conversation
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> list[str]:
        """Mark runs a previous server left unfinished as ``interrupted``; returns their ids."""
        return await asyncio.to_thread(self._interrupt_stale_runs)

    def _interrupt_stale_runs(self) -> list[str]:
        stale = [r for r in self.store.list_runs() if r.status not in TERMINAL_STATUSES]
        for record in stale:
            events = self.store.run_events(record.run_id)
            seq = events[-1].seq + 1 if events else 0
            reason = "server_restart"
            self.store.append_run_event(
                record.run_id, seq, _final_event(record.run_id, seq, "interrupted", reason)
            )
            data = dict(record.data, reason=reason, event_count=seq + 1)
            data["error"] = "the server stopped while this run was in flight"
            self.store.save_run(record.run_id, record.conversation_id, "interrupted", data)
        return [record.run_id for record in stale]

    async def stop(self) -> None:
        """Stop every run (they end ``interrupted``) and wait until they are recorded."""
        self._stopping = True
        runs = list(self._runs.values())
        for run in runs:
            if run.task is not None and not run.task.done():
                run.task.cancel()
        for run in runs:
            if run.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await run.task

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
        record = await self.store.aget_run(run_id)
        return None if record is None else record_summary(record)

    async def conversations(self, limit: int = 200) -> list[dict[str, Any]]:
        """Conversations that have runs, most recently started first."""
        records = await self.store.alist_runs(limit=limit * 20)
        seen: dict[str, dict[str, Any]] = {}
        for record in records:
            cid = record.conversation_id
            if cid is None:
                continue
            entry = seen.get(cid)
            if entry is not None:
                entry["runs"] += 1
                entry["first_question"] = record.data.get("question")  # older runs come later
                continue
            if len(seen) >= limit:
                continue
            live = self._runs.get(record.run_id)
            seen[cid] = {
                "conversation_id": cid,
                "first_question": record.data.get("question"),
                "last_question": record.data.get("question"),
                "last_status": live.status if live is not None else record.status,
                "updated_at": record.updated_at,
                "runs": 1,
            }
        return list(seen.values())

    async def exists(self, run_id: str) -> bool:
        return run_id in self._runs or await self.store.aget_run(run_id) is not None

    async def events(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """The run's events with ``seq > after``: stored or past ones first, then live ones.

        Ends when the run has ended and every event was yielded.
        """
        run = self._runs.get(run_id)
        if run is None:
            for record in await self.store.arun_events(run_id, after):
                yield record.event
            return
        index = after + 1
        while True:
            changed = run.changed
            while index < len(run.events):
                yield run.events[index]
                index += 1
            if run.sealed:
                return
            await changed.wait()

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
        run = ServerRun(uuid.uuid4().hex, conversation_id, content)
        waits_for = [r for r in self._runs.values()  # ended ones may still be storing
                     if r.conversation_id == conversation_id and not r.finished.is_set()]
        self._runs[run.run_id] = run
        self._active[conversation_id] = run
        if previous is not None:
            run.supersedes = previous.run_id
            self._supersede(previous, run)
        await self._save(run)  # stored before its id is handed out
        record = await self.store.aget_run(run.run_id)
        if record is not None:
            run.created_at = record.created_at
        run.task = asyncio.create_task(self._drive(run, waits_for), name=f"run:{run.run_id}")
        return run

    def abort(self, run_id: str) -> ServerRun | None:
        """Ask a live run to stop; ``None`` when it is not live (unknown or finished)."""
        run = self._runs.get(run_id)
        if run is None or run.done:
            return None
        run.abort_requested = True
        if run.brain is None:
            run.stop_waiting.set()
        else:
            run.brain.abort(run.run_id)
        return run

    async def abort_run(self, run_id: str) -> bool:
        return self.abort(run_id) is not None

    async def list_runs(self, conversation_id: str) -> list[RunRecord]:
        return await self.store.alist_runs(conversation_id)

    def _supersede(self, old: ServerRun, new: ServerRun) -> None:
        old.superseded_by = new.run_id
        if old.brain is None:  # still waiting for an earlier run: it never starts
            old.stop_waiting.set()
            return
        neural = old.brain.neural or self.neural
        neural.post_user_input(old.conversation_id, new.question)
        if self.supersede_grace_s == 0:
            old.brain.abort(old.run_id)
        else:
            old.grace_timer = asyncio.get_running_loop().call_later(
                self.supersede_grace_s, old.brain.abort, old.run_id
            )

    # -- a run -------------------------------------------------------------------------

    async def _drive(self, run: ServerRun, waits_for: Sequence[ServerRun]) -> None:
        writer = asyncio.create_task(self._persist(run), name=f"persist:{run.run_id}")
        try:
            if await self._wait_turn(run, waits_for):
                await self._execute(run)
            else:
                await self._end_unstarted(run, waits_for)
        except asyncio.CancelledError:
            self._end(run, "interrupted", "server_shutdown",
                      error="the server stopped while this run was in flight")
            await self._finish(run, writer)
            raise
        except Exception as exc:  # a bug around the brain: record it, never lose the run
            logger.exception("run %s failed unexpectedly", run.run_id)
            self._end(run, "failed", "error", error=f"{type(exc).__name__}: {exc}")
        await self._finish(run, writer)

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

    async def _end_unstarted(self, run: ServerRun, waits_for: Sequence[ServerRun]) -> None:
        """End a run that never started; a superseded one keeps its message, in turn."""
        if run.superseded_by is None:
            self._end(run, "aborted", "aborted")
            return
        self._end(run, "aborted", "superseded")
        await self._save(run)
        if self.memory is not None:
            # The user did say it. An earlier run stores its message when it starts, so
            # this one goes in once every earlier run has ended: messages stay in order.
            await asyncio.gather(*(r.finished.wait() for r in waits_for))
            await self.memory.acommit_message(run.conversation_id, run.question, "user")

    async def _execute(self, run: ServerRun) -> None:
        brain = self.brain_factory()
        if brain.neural is None:
            brain.connect_to_neural(self.neural)
        neural = brain.neural or self.neural
        neural.take_user_input(run.conversation_id)  # input meant for a run that has ended
        run.brain = brain
        run.status = RUNNING
        await self._save(run)
        loop = asyncio.get_running_loop()

        def deliver(event: Event) -> None:
            # Called where the event happens (possibly a plan's worker thread).
            loop.call_soon_threadsafe(self._on_brain_event, run, event.to_dict())

        result: BrainResult | None = None
        try:
            try:
                result = await brain.async_run(
                    run.question, run.conversation_id, on_event=deliver, run_id=run.run_id
                )
            finally:
                await _delivered(loop)
        except TFBrainError as exc:  # a timeout: the partial result is on the error
            if isinstance(exc.result, BrainResult):
                result = exc.result
            else:
                self._end(run, "failed", "error", error=f"{type(exc).__name__}: {exc}")
        except TFUserNewInputError as exc:
            neural.take_user_input(run.conversation_id)
            reason = "superseded" if run.superseded_by else "new_input"
            self._end(run, "aborted", reason, error=str(exc))
        if result is not None:
            for event in result.events[run.next_seq:]:  # any not delivered yet
                self._on_brain_event(run, dict(event))
            reason = result.reason
            if run.superseded_by is not None and result.status == "aborted":
                reason = "superseded"
            record = result.to_dict(include_events=False)  # with who validated, if anyone
            self._end(run, result.status, reason, result=record, error=result.error)

    def _on_brain_event(self, run: ServerRun, event: dict[str, Any]) -> None:
        seq = event.get("seq")
        if run.done or not isinstance(seq, int) or seq < run.next_seq:
            return  # already recorded (from the result) or after the run ended
        event["run_id"] = run.run_id
        event["seq"] = run.next_seq
        if event.get("type") == EventType.FINAL:
            if run.superseded_by is not None and event.get("status") == "aborted":
                event["reason"] = "superseded"
            event["superseded_by"] = run.superseded_by
        started = event.get("type") == EventType.RUN_STARTED
        if started and run.abort_requested and run.brain is not None:
            run.brain.abort(run.run_id)  # requested before the brain had a run to abort
        self._record(run, event)

    def _record(self, run: ServerRun, event: dict[str, Any]) -> None:
        """Number ``event``; readers see it once it is stored (so a seen seq survives a crash)."""
        event = encodable(event)  # a plan may build any string; SQLite and SSE need UTF-8
        run.next_seq += 1
        run.last_type = event.get("type")
        run.pending.append(event)
        run.has_pending.set()

    def _publish(self, run: ServerRun, events: list[dict[str, Any]]) -> None:
        run.events.extend(events)
        changed, run.changed = run.changed, asyncio.Event()
        changed.set()

    def _end(
        self,
        run: ServerRun,
        status: str,
        reason: str,
        *,
        result: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Set the terminal status; add a ``final`` event when the brain gave none."""
        if run.done:
            return
        if run.last_type != EventType.FINAL:
            final = _final_event(run.run_id, run.next_seq, status, reason)
            final.update(superseded_by=run.superseded_by, error=error,
                         plans=_plans_of([*run.events, *run.pending]))
            self._record(run, final)
        if result is not None:
            result = encodable(dict(result, run_id=run.run_id, reason=reason))
        run.result = result
        run.error = encodable(error)
        run.reason = reason
        run.status = status
        if self._active.get(run.conversation_id) is run:  # the slot is free from now on
            del self._active[run.conversation_id]
        changed, run.changed = run.changed, asyncio.Event()
        changed.set()

    async def _finish(self, run: ServerRun, writer: asyncio.Task[None]) -> None:
        if run.grace_timer is not None:
            run.grace_timer.cancel()
        run.closing = True
        run.has_pending.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(writer)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._save(run))
        run.finished.set()
        self._runs.pop(run.run_id, None)

    async def _persist(self, run: ServerRun) -> None:
        """Store the run's events in order, then make them visible to readers."""
        while True:
            await run.has_pending.wait()
            run.has_pending.clear()
            batch, run.pending = run.pending, []
            if batch:
                await asyncio.to_thread(self._store_events, run.run_id, batch)
                self._publish(run, batch)
            if run.closing and not run.pending:
                run.sealed = True
                self._publish(run, [])
                return

    def _store_events(self, run_id: str, events: list[dict[str, Any]]) -> None:
        for event in events:
            try:
                self.store.append_run_event(run_id, event["seq"], event)
            except Exception:  # a reader still gets the event live; the log says what is lost
                logger.exception("could not store event %s of run %s", event["seq"], run_id)

    async def _save(self, run: ServerRun) -> None:
        try:
            await self.store.asave_run(run.run_id, run.conversation_id, run.status, run.data())
        except Exception:
            logger.exception("could not store run %s", run.run_id)


async def _delivered(loop: asyncio.AbstractEventLoop) -> None:
    """Return once every event handed to the loop before this call has been recorded."""
    marker: asyncio.Future[None] = loop.create_future()
    loop.call_soon_threadsafe(marker.set_result, None)
    await marker


def _final_event(run_id: str, seq: int, status: str, reason: str) -> dict[str, Any]:
    return {"type": str(EventType.FINAL), "seq": seq, "ts": time.time(), "run_id": run_id,
            "status": status, "reason": reason, "final_result": None}


def _plans_of(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("plan", "")) for e in events
            if e.get("type") in (EventType.PLAN_CREATED, EventType.PLAN_REVISED)]
