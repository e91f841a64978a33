"""One run, driven the same way by every surface: :func:`execute_run`.

The server (in process and on a durable API node's workers), ``dcbrain ask`` and
``dcbrain mcp`` all start a run here. It is the one place where a run's end becomes a
:class:`RunOutcome`: a timeout's partial result (the brain's run returns it; only
``DCBrain.run()``/``async_run()`` raise it, as the product promises), new user input
mapped to ``superseded`` or ``new_input``, an abort asked before the run had started,
and the ``final`` event a run gets when its brain wrote none.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dcbrain.brain import BrainResult, RunDeps
from dcbrain.events import ErrorEvent, Event, EventType, Final, PlanCreated, PlanRevised
from dcbrain.exceptions import RunSuspended, TFUserNewInputError
from dcbrain.logs import run_scope
from dcbrain.runs.observers import run_observers
from dcbrain.runs.status import WAITING
from dcbrain.telemetry import continued_trace
from dcbrain.values.text import encodable

logger = logging.getLogger("dcbrain.runs")

Sink = Callable[[Event], None]
"""Receives a run's events, in order, from whichever thread they happen on."""


class StartedRun(Protocol):
    """A run a brain made: :class:`~dcbrain.brain.BrainRun` is one."""

    run_id: str

    async def execute(self) -> BrainResult: ...

    def abort(self) -> bool: ...


class RunnableBrain(Protocol):
    """What a surface needs of a brain: :class:`~dcbrain.brain.DCBrain` is one."""

    def start_run(
        self, question: str, conversation_id: str = ..., *, run_id: str | None = ...,
        deps: RunDeps | None = ...,
    ) -> AbstractAsyncContextManager[StartedRun]: ...

    def warm_up(self) -> None: ...


@dataclass(eq=False)
class RunRequest:
    """One question to run, and what its surface tells it while it runs (on its loop)."""

    run_id: str
    conversation_id: str
    question: str
    superseded_by: str | None = None
    abort_requested: bool = False
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    #: Events delivered so far: the position a ``final`` written here takes.
    next_seq: int = 0
    ended: bool = False
    #: The W3C ``traceparent`` of the span that submitted the run: its spans continue it.
    traceparent: str | None = None
    plans: list[str] = field(default_factory=list)
    _run: StartedRun | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def abort(self) -> None:
        """Stop the run as soon as possible, even if it has not started yet."""
        self.abort_requested = True
        if self._run is not None:
            self._run.abort()

    @property
    def started(self) -> bool:
        return self._run is not None

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: ``status``, ``reason``, the brain's result (if it gave one) and
    the error that ended it."""

    run_id: str
    status: str
    reason: str
    result: BrainResult | None = None
    error: str | None = None

    def result_record(self) -> dict[str, Any] | None:
        """The result as stores keep it: without events, with the run's id and reason."""
        if self.result is None:
            return None
        record = self.result.to_dict(include_events=False)
        return encodable(dict(record, run_id=self.run_id, reason=self.reason))


def final_event(request: RunRequest, status: str, reason: str, *,
                error: str | None = None) -> Event:
    """The ``final`` event of a run whose brain wrote none (it never started, was
    superseded while waiting, crashed or was stopped); it takes the next position."""
    return Event(
        payload=Final(status=status, reason=reason, final_result=None, error=error,
                      plans=list(request.plans), run_id=request.run_id,
                      superseded_by=request.superseded_by),
        seq=request.next_seq, ts=time.time(), run_id=request.run_id)


def end_unstarted(request: RunRequest, sink: Sink, status: str, reason: str, *,
                  error: str | None = None) -> RunOutcome:
    """End a run from outside its brain: its ``final`` event (unless it has one) and
    outcome. ``reason`` ``aborted`` becomes ``superseded`` for a superseded run."""
    if reason == "aborted" and request.superseded_by is not None:
        reason = "superseded"
    if not request.ended:
        _deliver(request, sink, final_event(request, status, reason, error=error))
    return RunOutcome(request.run_id, status, reason, error=error)


def _deliver(request: RunRequest, sink: Sink, event: Event) -> None:
    with request._lock:
        if request.ended:
            return  # nothing follows a run's final event
        payload = event.payload
        if isinstance(payload, Final):
            request.ended = True
            if request.superseded_by is not None:
                reason = "superseded" if payload.status == "aborted" else payload.reason
                payload = payload.model_copy(
                    update={"superseded_by": request.superseded_by, "reason": reason})
                event = replace(event, payload=payload)
        elif isinstance(payload, PlanCreated | PlanRevised):
            request.plans.append(payload.plan or "")
        request.next_seq = max(request.next_seq, event.seq + 1)
    sink(event)
    run_observers.notify(event)
    if isinstance(event.payload, Final | ErrorEvent):
        _log_end_or_error(request, event)


def _log_end_or_error(request: RunRequest, event: Event) -> None:
    """One line per run end (status, reason, duration) and per error event."""
    fields = {"run_id": request.run_id, "conversation_id": request.conversation_id}
    payload = event.payload
    if isinstance(payload, ErrorEvent):
        logger.warning("run error in %s: %s", payload.source, payload.error,
                       extra={**fields, "source": payload.source, "error": payload.error})
        return
    assert isinstance(payload, Final)
    logger.info("run ended: %s (%s)", payload.status, payload.reason,
                extra={**fields, "status": payload.status, "reason": payload.reason,
                       "duration_s": payload.duration_s, "error": payload.error})


async def execute_run(brain: RunnableBrain, request: RunRequest, deps: RunDeps,
                      sink: Sink) -> RunOutcome:
    """Run ``request`` on ``brain`` with ``deps``; every event goes to ``sink``.

    Returns on every stop with the run's outcome, and the last event ``sink`` got is
    the run's ``final`` — but for a run whose desk suspended it until its approvals are
    decided (status ``waiting``, no ``final`` yet). A cancellation (a server or worker
    stopping) propagates: the caller decides whether the run ends (:func:`end_unstarted`)
    or stays to be resumed.
    """
    with run_scope(request.run_id, request.conversation_id), \
            continued_trace(request.traceparent):
        logger.info("run started")
        return await _execute(brain, request, deps, sink)


async def _execute(brain: RunnableBrain, request: RunRequest, deps: RunDeps,
                   sink: Sink) -> RunOutcome:
    if request.abort_requested:
        return end_unstarted(request, sink, "aborted", "aborted")

    def on_event(event: Event) -> None:
        _deliver(request, sink, event)
        if event.type == EventType.RUN_STARTED and request.abort_requested \
                and request._run is not None:
            request._run.abort()  # asked before the run could be aborted

    try:
        try:
            async with brain.start_run(request.question, request.conversation_id,
                                       run_id=request.run_id,
                                       deps=deps.with_subscriber(on_event)) as run:
                request._run = run
                if request.abort_requested:  # asked while the run was made: kept for it
                    run.abort()
                result = await run.execute()
        finally:
            request._run = None
            request.cancel_timers()
    except RunSuspended:  # its calls wait for people; a decision makes it execute again
        logger.info("run waiting for approval", extra={"status": WAITING, "reason": "approval"})
        return RunOutcome(request.run_id, WAITING, "approval")
    except TFUserNewInputError as exc:
        if deps.mailbox is not None:
            deps.mailbox.take_user_input(request.conversation_id)  # it was for this run
        return end_unstarted(request, sink, "aborted",
                             "superseded" if request.superseded_by else "new_input",
                             error=str(exc))
    except Exception as exc:  # around the brain: record it, never lose the run
        logger.exception("run %s failed unexpectedly", request.run_id)
        return end_unstarted(request, sink, "failed", "error",
                             error=f"{type(exc).__name__}: {exc}")
    reason: str = result.reason
    if request.superseded_by is not None and result.status == "aborted":
        reason = "superseded"
        if deps.mailbox is not None:  # aborted before it read the input meant to stop it
            deps.mailbox.take_user_input(request.conversation_id)
    return RunOutcome(request.run_id, result.status, reason, result=result, error=result.error)
