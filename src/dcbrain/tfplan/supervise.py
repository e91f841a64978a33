"""Keeping a plan run to its time limit while a host call does not return.

A sync chain or tool cannot be interrupted: one that never returns holds its thread for
good. So every run is driven from a thread of its own (:func:`start_driver`) while the
caller waits for it under a :class:`Supervision`: at the plan's time limit the run is
stopped (plan code gets its stop signal, async calls are cancelled, the sandbox process
is told), and if it still has not ended :data:`CALL_GRACE_S` later because a sync call
is running, the caller stops waiting. That call is *abandoned*: its thread runs on until
the callable returns, and then its return (or error) is ignored — never traced,
reported or recorded as finished (:func:`~dcbrain.tfplan.host.call_may_finish`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from dcbrain.tfplan.abandoned import abandoned_threads
from dcbrain.tfplan.errors import TimeLimitExceeded
from dcbrain.tfplan.result import CallRecord
from dcbrain.tfplan.state import Expired, RunState

#: How long past the time limit a run waits for a sync call before abandoning it.
CALL_GRACE_S = 0.4
#: How long past the time limit a run waits for plan code that holds its thread (one
#: long C-level operation); a sandbox process is killed well before this.
PLAN_GRACE_S = 2.5
#: Idle driver threads kept for the next runs, and how long one waits for work.
_IDLE_DRIVERS = 16
_IDLE_S = 30.0

_idle: list[queue.SimpleQueue[Callable[[], None] | None]] = []
_idle_lock = threading.Lock()


def start_driver(work: Callable[[], None]) -> None:
    """Run ``work`` in a driver thread: an idle one of an earlier run, else a new one.

    A driver whose run abandoned it is busy until its call returns, so it is never taken
    for another run.
    """
    with _idle_lock:
        inbox = _idle.pop() if _idle else None
    if inbox is not None:
        inbox.put(work)
        return
    inbox = queue.SimpleQueue()
    inbox.put(work)
    threading.Thread(target=_drive, args=(inbox,), name="tf_plan", daemon=True).start()


def _drive(inbox: queue.SimpleQueue[Callable[[], None] | None]) -> None:
    thread = threading.current_thread()
    while True:
        try:
            work = inbox.get(timeout=_IDLE_S)
        except queue.Empty:
            with _idle_lock:
                if inbox in _idle:
                    _idle.remove(inbox)
                    return
            continue  # taken for a run just now: its work is on the way
        if work is None:
            return
        thread.name = "tf_plan"  # named for what it does: driving a run, or waiting idle
        work()
        work = None  # nothing of the run is kept while this thread waits for the next
        thread.name = "tf_plan-idle"
        with _idle_lock:
            if len(_idle) >= _IDLE_DRIVERS:
                return
            _idle.append(inbox)


class Supervision:
    """The caller's side of one run: when to stop it, and when to stop waiting for it."""

    def __init__(self, state: RunState, timeout_s: float) -> None:
        self.state = state
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.stopped = False

    def wait_s(self) -> float:
        """Seconds to wait for the run before the next :meth:`overdue`."""
        due = self.deadline
        if self.stopped:
            due += CALL_GRACE_S if self.state.calling else PLAN_GRACE_S
        return max(0.0, due - time.monotonic())

    def overdue(self) -> bool:
        """Called when :meth:`wait_s` passed: stop the run at its time limit (``False``,
        keep waiting for it to end), or, past the grace, ``True``: stop waiting."""
        if not self.stopped:
            self.stopped = True
            self.state.stop(Expired)
            return False
        return self.wait_s() == 0.0

    def abandon(self, lines: Sequence[str], stop_process: Callable[[], None] | None
                ) -> TimeLimitExceeded:
        """Stop waiting for the run: its running calls are abandoned and reported; the
        error the run ends with, at the line of the oldest abandoned call."""
        abandoned = abandon_calls(self.state, stop_process)
        state = self.state
        message = f"plan ran longer than its limit of {self.timeout_s:g} s"
        if abandoned:
            names = ", ".join(f"{record.name}()" for record in abandoned)
            message += f"; abandoned {names}: still running, its return will be ignored"
        error = TimeLimitExceeded(message)
        where = abandoned[0] if abandoned else (state.trace[-1] if state.trace else None)
        line, col = (where.line, where.col) if where is not None else (0, 0)
        error.with_position(line, col, lines[line - 1] if 0 < line <= len(lines) else None)
        error.stdout = state.stdout
        error.trace = list(state.trace)
        error.abandoned_calls = len(abandoned)
        return error


def abandon_calls(state: RunState, stop_process: Callable[[], None] | None, *,
                  ended: bool = True) -> list[CallRecord]:
    """Stop waiting for ``state``'s running calls; report each to the run's observer
    (``on_call_abandoned`` if it has one, then, with ``ended``, ``on_call_end``: a
    cancelled run's caller closes its open calls itself)."""
    abandoned = state.abandon()
    for record in abandoned:  # each holds a thread until its callable returns
        call = state.abandonable.get(id(record))
        if call is not None:
            abandoned_threads.abandon(call)
    if stop_process is not None:
        stop_process()
    now = time.time()
    observer: Any = state.observer
    for record in abandoned:
        record.error = "abandoned: the plan stopped waiting for this call"
        record.duration_s = max(0.0, now - record.started_at)
        if observer is not None:
            report = getattr(observer, "on_call_abandoned", None)
            if report is not None:
                report(record)
            if ended:
                observer.on_call_end(record)
    return abandoned
