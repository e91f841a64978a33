"""Executing one run on a worker: a fresh brain, events to the store, status transitions.

The DBOS workflow (``workflow.py``) calls :meth:`RunExecutor.execute` with the run id it
was started under; everything here is plain dcbrain, so it is tested without DBOS too.
Every exit of :meth:`execute` records a terminal status and a ``final`` event, except
a worker shutdown, which leaves the run ``running`` for the next execution to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dcbrain._text import encodable
from dcbrain.brain import BrainResult
from dcbrain.durable.journal import RecordedMemory, RunJournal
from dcbrain.durable.loop import RunLoop
from dcbrain.durable.sink import EventSink
from dcbrain.durable.store import DurableStore
from dcbrain.durable.writer import StoreWriter
from dcbrain.events import Event, EventType
from dcbrain.exceptions import DurableRunError, TFBrainError, TFUserNewInputError
from dcbrain.journal import CallJournal
from dcbrain.memory import RunRecord
from dcbrain.neural import Neural
from dcbrain.server.runs import DEFAULT_SUPERSEDE_GRACE_S, QUEUED, RUNNING, RunnableBrain

logger = logging.getLogger("dcbrain.durable")

class DurableBrain(RunnableBrain, Protocol):
    """What a worker needs of a brain, beyond the server's: its memory, runs under a given
    journal and clock, and a warm-up. :class:`~dcbrain.brain.DCBrain` is one."""

    memory: Any

    async def async_run(
        self,
        question: str,
        conversation_id: str = ...,
        *,
        on_event: Callable[[Event], None] | None = ...,
        run_id: str | None = ...,
        journal: CallJournal | None = ...,
        clock: Callable[[], float] | None = ...,
    ) -> BrainResult: ...

    def warm_up(self) -> None: ...


DurableBrainFactory = Callable[[], DurableBrain]


@dataclass(eq=False)
class LiveRun:
    """A run executing in this process."""

    run_id: str
    conversation_id: str
    brain: DurableBrain
    neural: Neural
    sink: EventSink
    journal: RunJournal
    abort_requested: bool = False
    timers: list[asyncio.TimerHandle] = field(default_factory=list)


class RunExecutor:
    """Runs the brain for durable runs of one worker process and answers control messages."""

    def __init__(self, store: DurableStore, brain_factory: DurableBrainFactory, *,
                 executor_id: str = "local",
                 supersede_grace_s: float = DEFAULT_SUPERSEDE_GRACE_S,
                 max_threads: int = 128) -> None:
        self.store = store
        self.brain_factory = brain_factory
        self.executor_id = executor_id
        self.supersede_grace_s = supersede_grace_s
        self.live: dict[str, LiveRun] = {}
        self.stopping = False
        #: The loop every run of this process executes on.
        self.runs = RunLoop(max_threads=max_threads)
        #: Events and journal rows of every run of this process, written in batches.
        self.writer = StoreWriter(store)

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
            self.runs.call_soon(self._abort, live)
        elif op == "supersede":
            self.runs.call_soon(self._supersede, live, str(message.get("by", "")),
                                str(message.get("text", "")))

    def _abort(self, live: LiveRun) -> None:
        live.abort_requested = True
        live.brain.abort(live.run_id)

    def _supersede(self, live: LiveRun, by: str, text: str) -> None:
        """Post the new input (the run stops at its next safe point); abort after the grace."""
        live.sink.superseded_by = by or live.sink.superseded_by
        live.neural.post_user_input(live.conversation_id, text)
        if self.supersede_grace_s == 0:
            live.brain.abort(live.run_id)
        else:
            live.timers.append(asyncio.get_running_loop().call_later(
                self.supersede_grace_s, live.brain.abort, live.run_id))

    # -- a run ---------------------------------------------------------------------------

    async def execute(self, run_id: str, conversation_id: str, question: str) -> dict[str, Any]:
        """Execute (or resume) the run; returns its summary (``status``, ``reason``)."""
        claimed, journal = await asyncio.to_thread(self._claim, run_id)
        if claimed is None or journal is None:  # ended before it started, or unknown
            record = await asyncio.to_thread(self.store.get_run, run_id)
            status = record.status if record is not None else "unknown"
            return {"run_id": run_id, "status": status, "executed": False}
        sink = EventSink(self.store, run_id, self.writer)
        brain = self.brain_factory()
        if brain.memory is not None:  # commits once, recalls as recorded
            brain.memory = RecordedMemory(brain.memory, journal)
        if brain.neural is None:
            brain.connect_to_neural(Neural())  # per run: supersede signals reach this run only
        neural = brain.neural
        assert neural is not None
        live = LiveRun(run_id, conversation_id, brain, neural, sink, journal)
        sink.superseded_by = claimed.data.get("superseded_by")
        self.live[run_id] = live
        # Asked to stop while no worker ran it (this is a recovery): it stops at once.
        record = await asyncio.to_thread(self.store.get_run, run_id)
        if record is not None and (record.data.get("abort_requested")
                                   or record.data.get("superseded_by")):
            live.abort_requested = True
            sink.superseded_by = record.data.get("superseded_by")
        running = asyncio.wrap_future(self.runs.submit(self._contained(live, question)))
        try:
            try:
                outcome = await asyncio.shield(running)
            except asyncio.CancelledError:
                if self.stopping:  # the worker stops: the run stays running, resumes later
                    await asyncio.to_thread(sink.close)
                    raise
                self.runs.call_soon(self._abort, live)  # it ends as aborted, by itself
                outcome = await running
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            logger.warning("run %s failed: %s", run_id, exc)
            outcome = ("failed", "error", None, str(exc) if isinstance(exc, DurableRunError)
                       else f"{type(exc).__name__}: {exc}")
            await self._close(live, sink, outcome)
            raise DurableRunError(outcome[3]) from None
        finally:
            self.live.pop(run_id, None)
        return await self._close(live, sink, outcome)

    def _claim(self, run_id: str) -> tuple[RunRecord | None, RunJournal | None]:
        """Mark the run as running here (if it may run) and load its journal."""
        claimed = self.store.update_run(
            run_id, RUNNING, {"executor_id": self.executor_id, "started_at": time.time()},
            only_from=(QUEUED, RUNNING))
        if claimed is None:
            return None, None
        return claimed, RunJournal(self.store, run_id, writer=self.writer)

    async def _contained(
        self, live: LiveRun, question: str
    ) -> tuple[str, str, dict[str, Any] | None, str | None]:
        """:meth:`_run_brain` on the run loop, where anything it raises is an ``Exception``.

        The workflow awaits it from DBOS's loop: a ``SystemExit`` or ``KeyboardInterrupt``
        from a tool must end this run as ``failed``, not reach DBOS or stop a loop.
        """
        try:
            return await self._run_brain(live, question)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            raise DurableRunError(f"{type(exc).__name__}: {exc}") from None
        finally:
            for timer in live.timers:
                timer.cancel()

    async def _run_brain(
        self, live: LiveRun, question: str
    ) -> tuple[str, str, dict[str, Any] | None, str | None]:
        """The brain's outcome: (status, reason, result, error)."""
        result: BrainResult | None = None

        def on_event(event: Event) -> None:
            live.sink(event)
            if event.type == EventType.RUN_STARTED and live.abort_requested:
                live.brain.abort(live.run_id)  # requested before the brain had a run to abort

        try:
            result = await live.brain.async_run(
                question, live.conversation_id, on_event=on_event, run_id=live.run_id,
                journal=live.journal.calls, clock=live.journal.clock)
        except TFBrainError as exc:  # a timeout: the partial result is on the error
            if not isinstance(exc.result, BrainResult):
                return "failed", "error", None, f"{type(exc).__name__}: {exc}"
            result = exc.result
        except TFUserNewInputError as exc:
            reason = "superseded" if live.sink.superseded_by else "new_input"
            return "aborted", reason, None, str(exc)
        reason = result.reason
        if live.sink.superseded_by is not None and result.status == "aborted":
            reason = "superseded"
        return result.status, reason, result.to_dict(include_events=False), result.error

    async def _close(
        self,
        live: LiveRun,
        sink: EventSink,
        outcome: tuple[str, str, dict[str, Any] | None, str | None],
    ) -> dict[str, Any]:
        status, reason, result, error = outcome
        if sink.last_type != "final":
            await asyncio.to_thread(sink.final, status, reason, error=error,
                                    superseded_by=live.sink.superseded_by)
        await asyncio.to_thread(sink.close)
        if result is not None:
            result = encodable(dict(result, run_id=live.run_id, reason=reason))
        changes = {"reason": reason, "result": result,
                   "error": encodable(error), "superseded_by": live.sink.superseded_by,
                   "event_count": sink.next_seq, "finished_at": time.time()}
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.store.update_run, live.run_id, status, changes,
                                    only_from=(RUNNING, QUEUED))
        return {"run_id": live.run_id, "status": status, "reason": reason, "executed": True}

