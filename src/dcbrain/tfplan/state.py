"""Mutable state of one plan run, shared by guards, host dispatch and the watchdog.

The watchdog enforces the wall-time limit and cancellation without a check in the hot
path: when time is up it raises an exception asynchronously in every thread that is
running plan code (never in one that is inside a host call; that call finishes first and
the plan stops right after it).
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from dcbrain.tfplan.abandoned import AbandonedCall
from dcbrain.tfplan.errors import Cancelled as Cancelled
from dcbrain.tfplan.errors import Expired as Expired
from dcbrain.tfplan.host_budget import HostBudget
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.result import CallRecord

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures


class CallObserver(Protocol):
    """Receives every host call of a plan as it starts and when it ends."""

    def on_call_start(self, record: CallRecord) -> None: ...

    def on_call_end(self, record: CallRecord) -> None: ...


class ParallelHooks(Protocol):
    """Lets the chain layer give each ``parallel`` branch its own context and merge after.

    ``fork(n)`` returns one token per branch (called in the parent), ``enter(token)`` runs
    in the branch's thread before its expression, ``join(tokens)`` runs in the parent
    after every branch finished, in argument order.
    """

    def fork(self, count: int) -> list[Any]: ...

    def enter(self, token: Any) -> None: ...

    def join(self, tokens: list[Any]) -> None: ...


_PY_SET_ASYNC_EXC: Any
try:
    _PY_SET_ASYNC_EXC = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
        ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
    )
except (AttributeError, OSError):  # not CPython: limits still apply at host-call boundaries
    _PY_SET_ASYNC_EXC = None


@dataclass
class RunState:
    limits: Limits
    loop: asyncio.AbstractEventLoop | None = None
    observer: CallObserver | None = None
    parallel_hooks: ParallelHooks | None = None
    passthrough: tuple[type[BaseException], ...] = ()
    output: list[str] = field(default_factory=list)
    output_chars: int = 0
    trace: list[CallRecord] = field(default_factory=list)
    calls: int = 0
    started_at: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    expired: bool = False
    cancelled: bool = False
    finished: bool = False
    plan_threads: set[int] = field(default_factory=set)
    host_depth: dict[int, int] = field(default_factory=dict)
    active_futures: set[concurrent.futures.Future[Any]] = field(default_factory=set)
    signalled: set[int] = field(default_factory=set)
    #: the host call each thread is in, for the calls a stopped run has to abandon
    calling: dict[int, CallRecord] = field(default_factory=dict)
    #: the run gave up waiting for its host calls: their returns are ignored
    abandoned: bool = False
    #: the running host calls (by ``id`` of their record), counted once abandoned
    abandonable: dict[int, AbandonedCall] = field(default_factory=dict)
    branch: threading.local = field(default_factory=threading.local)
    #: threads ``parallel`` may still start (the plan's own thread is one of max_parallel)
    spare_threads: int = -1
    #: a budget the caller shares with the run (its chains charge it too), else a new one
    shared_budget: InitVar[HostBudget | None] = None
    #: the caller's abort flag, asked as host calls start and end: an abort the caller
    #: asked stops the plan at its next call even before the cancellation reaches it
    stop_asked: Callable[[], bool] | None = None
    #: what the host keeps for this run
    host_budget: HostBudget = field(init=False)

    def __post_init__(self, shared_budget: HostBudget | None) -> None:
        if self.spare_threads < 0:
            self.spare_threads = self.limits.max_parallel - 1
        self.host_budget = shared_budget if shared_budget is not None \
            else HostBudget(self.limits.host_bytes)

    @property
    def stopping(self) -> bool:
        """Whether the run is over or being stopped: no new branch may start."""
        return self.finished or self.expired or self.cancelled

    def reserve_threads(self, wanted: int) -> int:
        """Take up to ``wanted`` of the run's spare threads; returns how many."""
        with self.lock:
            granted = max(0, min(wanted, self.spare_threads))
            self.spare_threads -= granted
            return granted

    def release_threads(self, count: int) -> None:
        with self.lock:
            self.spare_threads += count

    # -- threads running plan code -------------------------------------------------
    def add_plan_thread(self) -> None:
        with self.lock:
            self.plan_threads.add(threading.get_ident())

    def remove_plan_thread(self) -> None:
        tid = threading.get_ident()
        while True:  # a signal may land while leaving; the thread must still be removed
            try:
                with self.lock:
                    self.plan_threads.discard(tid)
                self._clear_pending(tid)
                return
            except (Expired, Cancelled):
                continue

    # -- host calls ----------------------------------------------------------------
    def enter_host(self, record: CallRecord | None = None) -> None:
        tid = threading.get_ident()
        with self.lock:
            self._raise_if_stopped()
            self.host_depth[tid] = self.host_depth.get(tid, 0) + 1
            if record is not None:
                self.calling[tid] = record

    def leave_host(self) -> None:
        tid = threading.get_ident()
        with self.lock:
            self.host_depth[tid] -= 1
            self.calling.pop(tid, None)
            self._raise_if_stopped()

    def claim_finish(self) -> bool:
        """Whether this thread's host call may still count as finished: ``False`` once the
        run abandoned it (its return is ignored, so nothing may record it as finished)."""
        with self.lock:
            if self.abandoned:
                return False
            self.calling.pop(threading.get_ident(), None)
            return True

    def abandon(self) -> list[CallRecord]:
        """Stop waiting for the run's host calls; the ones still running, oldest first."""
        with self.lock:
            self.abandoned = True
            if not self.cancelled:
                self.expired = True
            running = sorted(self.calling.values(), key=lambda record: record.started_at)
            self.calling.clear()
        return running

    def _raise_if_stopped(self) -> None:
        if not self.cancelled and self.stop_asked is not None and self.stop_asked():
            self.cancelled = True
        if self.cancelled:
            raise Cancelled
        if self.expired:
            raise Expired

    # -- stopping ------------------------------------------------------------------
    def stop(self, signal: type[BaseException]) -> None:
        """Stop every plan thread with ``signal`` (Expired or Cancelled)."""
        with self.lock:
            if self.finished:
                return
            if signal is Expired:
                self.expired = True
            else:
                self.cancelled = True
            for tid in self.plan_threads:
                if self.host_depth.get(tid, 0) == 0 and _PY_SET_ASYNC_EXC is not None:
                    _PY_SET_ASYNC_EXC(tid, signal)
                    self.signalled.add(tid)
            for future in list(self.active_futures):
                future.cancel()

    def finish(self) -> None:
        """Mark the run finished; no signal is sent after this returns."""
        tid = threading.get_ident()
        while True:
            try:
                with self.lock:
                    self.finished = True
                self._clear_pending(tid)
                return
            except (Expired, Cancelled):
                continue

    def _clear_pending(self, tid: int) -> None:
        """Take delivery of a signal sent to this thread but not yet raised.

        Clearing it with ``PyThreadState_SetAsyncExc(tid, NULL)`` would leave CPython's
        pending flag set, which makes a traced or profiled thread spin; letting it raise
        here, where it is expected, resets the flag.
        """
        with self.lock:
            if tid not in self.signalled:
                return
            self.signalled.discard(tid)
        try:
            for _ in range(100):  # backward jumps: where CPython raises pending signals
                pass
        except (Expired, Cancelled):
            pass

    # -- output ----------------------------------------------------------------------
    @property
    def stdout(self) -> str:
        return "".join(self.output)


class Watchdog:
    """Stops runs whose wall-time limit has passed.

    One daemon thread serves every run of the process: it wakes every
    ``POLL_INTERVAL_S`` while runs are active, so starting a run costs a set insertion
    rather than a thread. Deadlines are therefore met within that interval.
    """

    POLL_INTERVAL_S: ClassVar[float] = 0.02
    _lock: ClassVar[threading.Lock] = threading.Lock()
    _active: ClassVar[dict[int, tuple[float, RunState]]] = {}
    _wake: ClassVar[threading.Event] = threading.Event()
    _thread: ClassVar[threading.Thread | None] = None

    def __init__(self, state: RunState, timeout_s: float) -> None:
        self._state = state
        self._deadline = time.monotonic() + timeout_s

    def start(self) -> None:
        cls = type(self)
        with cls._lock:
            cls._active[id(self)] = (self._deadline, self._state)
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._watch, name="tf_plan-watchdog",
                                               daemon=True)
                cls._thread.start()
        cls._wake.set()

    def stop(self) -> None:
        with type(self)._lock:
            type(self)._active.pop(id(self), None)

    @classmethod
    def _watch(cls) -> None:
        while True:
            cls._wake.wait()
            time.sleep(cls.POLL_INTERVAL_S)
            now = time.monotonic()
            with cls._lock:
                due = [key for key, (deadline, _) in cls._active.items() if deadline <= now]
                expired = [cls._active.pop(key)[1] for key in due]
                if not cls._active:
                    cls._wake.clear()
            for state in expired:
                state.stop(Expired)
