"""Executing one run on a worker: the worker's brain, events to the store, status transitions.

The DBOS workflow (``workflow.py``) calls :meth:`RunExecutor.execute` with the run id it
was started under; everything here is plain dcbrain, so it is tested without DBOS too.
The run itself is driven by :func:`dcbrain.runs.execute_run`, with per-run
dependencies: the run's journal and clock, its memory as recorded in the journal, the
store for failed attempts and a mailbox of its own. Every exit of :meth:`execute`
records a terminal status and a ``final`` event, except a worker shutdown, which leaves
the run ``running`` for the next execution to resume.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from dcbrain.brain import RunDeps
from dcbrain.brain.deps import Resumption
from dcbrain.durable.approvals import Requeue, StoredApprovals, requeue_if_decided
from dcbrain.durable.journal import RecordedMemory, RunJournal
from dcbrain.durable.loop import RunLoop
from dcbrain.durable.sink import EventSink
from dcbrain.durable.store import DurableStore
from dcbrain.durable.writer import StoreWriter
from dcbrain.events import EventType
from dcbrain.exceptions import DurableRunError
from dcbrain.memory import StoredRun
from dcbrain.memory.run_store import EXECUTIONS, EXECUTOR_ID
from dcbrain.neural import Neural
from dcbrain.runs import (
    DEFAULT_SUPERSEDE_GRACE_S,
    QUEUED,
    RUNNING,
    STRANDED,
    WAITING,
    RunnableBrain,
    RunOutcome,
    RunRequest,
    SupersedePolicy,
    end_unstarted,
    execute_run,
)
from dcbrain.runs.resume import APPROVALS_DECIDED, WORKER_LOST, resumption
from dcbrain.values.text import encodable

logger = logging.getLogger("dcbrain.durable")


class DurableBrain(RunnableBrain, Protocol):
    """What a worker needs of a brain beyond the server's: the memory its runs record
    their conversation in. :class:`~dcbrain.brain.DCBrain` is one."""

    @property
    def memory(self) -> Any: ...


DurableBrainFactory = Callable[[], DurableBrain]
"""The brain a run executes on (a worker has one; its factory returns it each time)."""


@dataclass(eq=False)
class LiveRun:
    """A run executing in this process."""

    request: RunRequest
    mailbox: Neural  # a run's own: supersede signals reach this run only
    sink: EventSink
    journal: RunJournal
    resumed: Resumption | None = None


class RunExecutor:
    """Runs the brain for durable runs of one worker process and answers control messages."""

    def __init__(self, store: DurableStore, brain_factory: DurableBrainFactory, *,
                 executor_id: str = "local",
                 supersede_grace_s: float = DEFAULT_SUPERSEDE_GRACE_S,
                 max_threads: int = 128) -> None:
        self.store = store
        self.brain_factory = brain_factory
        self.executor_id = executor_id
        self.policy = SupersedePolicy(supersede_grace_s)
        self.live: dict[str, LiveRun] = {}
        #: The summary of each execution in progress here, once it ends (what a second
        #: execution of the same run returns).
        self._executing: dict[str, concurrent.futures.Future[dict[str, Any]]] = {}
        self.stopping = False
        #: The loop every run of this process executes on.
        self.runs = RunLoop(max_threads=max_threads)
        #: Events and journal rows of every run of this process, written in batches.
        self.writer = StoreWriter(store)
        #: Queues a run again (the engine's): one whose approvals were all decided while
        #: its execution was still ending.
        self.requeue: Requeue | None = None
        #: Called (in a thread) after a run's execution ended here: its slot is free.
        self.on_end: Callable[[], None] | None = None

    def warm_up(self) -> None:
        """Build one brain and have it load what its first run would load lazily.

        Provider SDKs, the tokenizer's tables and the plan sandbox take most of a second
        the first time in a process: paid here, at start, rather than on the first run's
        loop, where they would hold up its events and an abort asked meanwhile.
        """
        self.brain_factory().warm_up()

    def close(self) -> None:
        """Store what the runs queued; stop the run loop and the writer unless runs are in
        flight (they stay, to be resumed: see :meth:`RunLoop.close`)."""
        self.stopping = True
        self.runs.close()
        if self.runs.loop.is_closed():
            self.writer.close()
        else:
            self.writer.flush()

    # -- control (any thread) ------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> None:
        """Act on a control message when its run executes here."""
        live = self.live.get(str(message.get("run_id", "")))
        if live is None:
            return
        op = message.get("op")
        if op == "abort":
            self.runs.call_soon(live.request.abort)
        elif op == "supersede":
            self.runs.call_soon(self.policy.apply, live.request, str(message.get("by", "")),
                                str(message.get("text", "")), live.mailbox)

    # -- a run ---------------------------------------------------------------------------

    async def execute(self, run_id: str, conversation_id: str, question: str) -> dict[str, Any]:
        """Execute (or resume) the run; returns its summary (``status``, ``reason``).

        A second execution of a run this process executes already (DBOS handed it out
        again: its worker was called dead while it was not) starts nothing: it waits for
        the first one and returns its summary, so it can never record an outcome of its own.
        """
        already = self._executing.get(run_id)
        if already is not None:
            logger.warning("run %s: a second execution was started while this worker "
                           "executes it; it waits for the first and records nothing", run_id)
            return await asyncio.wrap_future(already)
        ended: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        self._executing[run_id] = ended
        try:
            summary = await self._execute(run_id, conversation_id, question)
        except BaseException as exc:
            ended.set_exception(exc if isinstance(exc, Exception)
                                else DurableRunError("the run's execution stopped"))
            raise
        else:
            ended.set_result(summary)
        finally:
            self._executing.pop(run_id, None)
            if self.on_end is not None and not self.stopping:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(self.on_end)
        return summary

    async def _execute(self, run_id: str, conversation_id: str,
                       question: str) -> dict[str, Any]:
        claimed, journal = await asyncio.to_thread(self._claim, run_id)
        if claimed is None or journal is None:  # ended before it started, or unknown
            record = await asyncio.to_thread(self.store.get_run, run_id)
            status = record.status if record is not None else "unknown"
            return {"run_id": run_id, "status": status, "executed": False}
        sink = EventSink(self.store, run_id, self.writer)
        resumed = await asyncio.to_thread(self._resumption, claimed)
        request = RunRequest(run_id, conversation_id, question,
                             superseded_by=claimed.data.get("superseded_by"),
                             next_seq=resumed.first_seq if resumed else 0,
                             traceparent=claimed.data.get("traceparent"))
        live = LiveRun(request, Neural(), sink, journal, resumed)
        self.live[run_id] = live
        return await self._run(live)

    async def _run(self, live: LiveRun) -> dict[str, Any]:
        request, sink, run_id = live.request, live.sink, live.request.run_id
        # Asked to stop while no worker ran it (this is a recovery): it stops at once.
        record = await asyncio.to_thread(self.store.get_run, run_id)
        if record is not None and (record.data.get("abort_requested")
                                   or record.data.get("superseded_by")):
            request.abort_requested = True
            request.superseded_by = record.data.get("superseded_by")
        running = asyncio.wrap_future(self.runs.submit(self._contained(live)))
        try:
            try:
                outcome = await asyncio.shield(running)
            except asyncio.CancelledError:
                if self.stopping:  # the worker stops: the run stays running, resumes later
                    await asyncio.to_thread(sink.close)
                    raise
                self.runs.call_soon(request.abort)  # it ends as aborted, by itself
                outcome = await running
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            logger.warning("run %s failed: %s", run_id, exc)
            error = str(exc) if isinstance(exc, DurableRunError) \
                else f"{type(exc).__name__}: {exc}"
            await self._close(live, RunOutcome(run_id, "failed", "error", error=error))
            raise DurableRunError(error) from None
        finally:
            self.live.pop(run_id, None)
        return await self._close(live, outcome)

    def _claim(self, run_id: str) -> tuple[StoredRun | None, RunJournal | None]:
        """Mark the run as running here (if it may run), count this execution and load
        its journal."""
        before = self.store.get_run(run_id)
        if before is None:
            return None, None
        earlier = before.executions or (1 if before.status == RUNNING else 0)
        claimed = self.store.update_run(  # a stranded run is resumed by this execution
            run_id, RUNNING, {EXECUTOR_ID: self.executor_id, "started_at": time.time(),
                              EXECUTIONS: earlier + 1},
            only_from=(QUEUED, RUNNING, STRANDED))
        if claimed is None:
            return None, None
        return claimed, RunJournal(self.store, run_id, writer=self.writer)

    def _resumption(self, run: StoredRun) -> Resumption | None:
        """What the earlier executions of ``run`` did, when this is not its first."""
        execution = run.executions or 1
        if execution <= 1:
            return None
        events = self.store.events(run.run_id)
        last = events[-1] if events else {}
        waited = last.get("type") == EventType.APPROVAL_REQUESTED or (
            last.get("type") == EventType.STATE_CHANGED and last.get("dest") == WAITING)
        return resumption(events, execution, APPROVALS_DECIDED if waited else WORKER_LOST)

    async def _contained(self, live: LiveRun) -> RunOutcome:
        """The run on the run loop, where anything it raises is an ``Exception``.

        The workflow awaits it from DBOS's loop: a ``SystemExit`` or ``KeyboardInterrupt``
        from a tool must end this run as ``failed``, not reach DBOS or stop a loop.
        """
        try:
            brain = self.brain_factory()
            memory = brain.memory
            deps = RunDeps(
                memory=None if memory is None else RecordedMemory(memory, live.journal),
                run_store=self.store, journal=live.journal.calls, clock=live.journal.clock,
                mailbox=live.mailbox, resumed=live.resumed,
                approvals=StoredApprovals(self.store, live.journal))
            return await execute_run(brain, live.request, deps, live.sink)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            raise DurableRunError(f"{type(exc).__name__}: {exc}") from None

    async def _suspend(self, live: LiveRun) -> dict[str, Any]:
        """The run waits for people's decisions: stored as ``waiting``, no ``final``."""
        request, sink = live.request, live.sink
        await asyncio.to_thread(sink.close)
        run_id = request.run_id
        await asyncio.to_thread(self.store.update_run, run_id, WAITING,
                                {"event_count": request.next_seq}, only_from=(RUNNING,))
        if self.requeue is not None:
            await asyncio.to_thread(requeue_if_decided, self.store, self.requeue, run_id)
        return {"run_id": run_id, "status": WAITING, "reason": "approval", "executed": True}

    async def _close(self, live: LiveRun, outcome: RunOutcome) -> dict[str, Any]:
        request, sink = live.request, live.sink
        if outcome.status == WAITING:
            return await self._suspend(live)
        if not request.ended:  # after every event an earlier execution stored
            request.next_seq = await asyncio.to_thread(sink.next_free_seq, request.next_seq)
            end_unstarted(request, sink, outcome.status, outcome.reason, error=outcome.error)
        await asyncio.to_thread(sink.close)
        changes = {"reason": outcome.reason, "result": outcome.result_record(),
                   "error": encodable(outcome.error), "superseded_by": request.superseded_by,
                   "event_count": request.next_seq, "finished_at": time.time()}
        changes[EXECUTOR_ID] = self.executor_id  # the worker whose outcome this is
        final = [sink.final] if sink.final is not None else []
        try:
            # The status with the final event, at once. Stranded too: a worker silent too
            # long (not dead) may be called stranded.
            recorded = await asyncio.to_thread(
                self.store.end_run, request.run_id, outcome.status, changes, final,
                only_from=(RUNNING, QUEUED, STRANDED))
        except Exception:  # the run stays running in the store: a peer resumes it
            logger.exception("could not record the end (%s) of run %s", outcome.status,
                             request.run_id)
        else:
            if recorded is None:  # another execution of the run ended it first: it stands
                record = await asyncio.to_thread(self.store.get_run, request.run_id)
                logger.warning("run %s: this execution ended %s, but the run had ended "
                               "already (%s, by another execution); that outcome stands",
                               request.run_id, outcome.status,
                               record.status if record is not None else "unknown")
        return {"run_id": request.run_id, "status": outcome.status, "reason": outcome.reason,
                "executed": True}
