"""DBOS behind one adapter: the only module of dcbrain that imports ``dbos``.

DBOS's public API covers most of what durable runs need; seven things it does not, and
this module is where they are reached, so an upgrade that moves them breaks here (and in
``tests/durable/test_dbos_contract.py``) rather than somewhere in the engine:

- handing a dead executor's pending workflows back to the queue (``DBOS`` only does it for
  its Conductor service, through a private class method);
- knowing that a queue registered after launch is polled (DBOS starts the queue's thread at
  its next look at the queue table and says nothing; the thread's name is DBOS's);
- stopping this process from starting queued workflows while the ones it runs go on (a
  draining worker: DBOS stops polling only in ``destroy``, which abandons running ones;
  the queue threads share one stop event, passed to them as their first argument);
- waking the queue thread when a run is queued or ends, rather than polling the queue
  tightly (the thread waits on its stop event with a timeout; :func:`launch` makes that
  event one whose wait a notification ends early without stopping the thread);
- polling DBOS's own queues, and running its background jobs (delayed workflows,
  workflow timeouts), which dcbrain does not use, less often than every second, and not
  polling for schedules (none) every second in the first minute;
- capping how many runs this process takes from the queue at each look (its fair share;
  DBOS reads one ``worker_concurrency`` for every worker from the queue's row, which it
  reloads before each look through its system database's ``get_queue``);
- reaching this process's run executor from a workflow function (DBOS registers workflows as
  module-level functions, one DBOS per process, so the executor lives in a process-wide slot).

The dependency is pinned to the minor version this module was checked against.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from dbos import (
    DBOS,
    DBOSClient,
    DBOSConfig,
    DBOSPortableJSONSerializer,
    EnqueueOptions,
    Serializer,
    WorkflowHandle,
    WorkflowSerializationFormat,
)

from dcbrain.exceptions import DatabaseUnavailable
from dcbrain.exceptions import DBOSContractError as DBOSContractError

if TYPE_CHECKING:
    from dcbrain.durable.executor import RunExecutor

#: Inputs, outputs and errors stored as JSON any language reads (never pickles).
PORTABLE_JSON: Final[Serializer] = DBOSPortableJSONSerializer()

#: The name DBOS gives the thread that polls a queue (``dbos._queue``).
QUEUE_THREAD_PREFIX: Final = "queue-worker-"
#: The private class method DBOS's Conductor uses to recover an executor's workflows.
_RECOVER_PENDING: Final = "_recover_pending_workflows"


def recover_pending_workflows(executor_ids: list[str]) -> list[WorkflowHandle[Any]]:
    """Put the pending workflows of dead ``executor_ids`` back on their queues."""
    recover = getattr(DBOS, _RECOVER_PENDING, None)
    if recover is None:
        raise DBOSContractError(
            f"DBOS.{_RECOVER_PENDING} is gone from this DBOS version: dead workers' runs "
            "cannot be recovered; pin dbos to the version dcbrain was tested with")
    handles: list[WorkflowHandle[Any]] = recover(executor_ids)
    return handles


def queue_is_polled(queue_name: str) -> bool:
    """Whether DBOS's thread polling ``queue_name`` runs in this process."""
    name = QUEUE_THREAD_PREFIX + queue_name
    return any(thread.name == name for thread in threading.enumerate())


def wait_until_polled(queue_name: str, timeout_s: float = 3.0) -> bool:
    """Wait until DBOS polls the queue, so that a worker is ready when it says so.

    ``False`` after ``timeout_s`` (a DBOS that renamed the thread only costs this wait,
    once per start; the contract test catches it).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if queue_is_polled(queue_name):
            return True
        time.sleep(0.02)
    return False


def migrate_system_database(system_database_url: str) -> None:
    """Create or migrate DBOS's schema (DBOS serialises concurrent migrations with an
    advisory lock, so every node may call it at once)."""
    with database_errors("migrating DBOS's schema"):
        DBOS.migrate(system_database_url)


#: SQLSTATEs of a schema that is not there yet: undefined table, column, schema, function.
_SCHEMA_MISSING: Final = ("42P01", "42703", "3F000", "42883")


@contextmanager
def database_errors(doing: str) -> Iterator[None]:
    """Raise :class:`DatabaseUnavailable` for what DBOS raises when its database is down
    or its schema not migrated yet (SQLAlchemy wraps psycopg's errors, DBOS may wrap those)."""
    import psycopg

    try:
        yield
    except DatabaseUnavailable:
        raise
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, psycopg.OperationalError):
                raise DatabaseUnavailable(f"{doing}: the database is unavailable: "
                                          f"{cause}") from exc
            if isinstance(cause, psycopg.Error) and (cause.sqlstate or "") in _SCHEMA_MISSING:
                raise DatabaseUnavailable(f"{doing}: DBOS's schema is not migrated yet: "
                                          f"{cause}") from exc
            cause = cause.__cause__ or cause.__context__
        raise


def stop_dequeuing(queue_name: str) -> bool:
    """Stop this process's DBOS from starting workflows queued on ``queue_name`` (and its
    other queues); workflows it runs go on. ``False`` when no polling thread was found."""
    stop_event = _queue_stop_event(queue_name)
    if stop_event is None:
        return False
    stop_event.set()
    return True


def _queue_stop_event(queue_name: str) -> threading.Event | None:
    name = QUEUE_THREAD_PREFIX + queue_name
    for thread in threading.enumerate():
        if thread.name != name:
            continue
        arguments = getattr(thread, "_args", ())
        stop_event = arguments[0] if arguments else None
        if not isinstance(stop_event, threading.Event):
            raise DBOSContractError(
                f"DBOS's thread {name} no longer takes its stop event as first argument: a "
                "worker cannot stop taking runs, nor be woken; pin dbos to the version "
                "dcbrain was tested with")
        return stop_event
    return None


class WakeableEvent(threading.Event):
    """An event whose :meth:`wait` returns whether it is set, and ends early, unset, when
    :meth:`wake` was called: during the wait, or since the last wait ended. A wake that
    comes while the queue thread is busy dequeuing is kept for its next wait, so a run
    queued or ended at that moment is looked at at once rather than at the next poll.
    (``threading.Event.wait`` returns ``True`` for any notification.)"""

    def __init__(self) -> None:
        super().__init__()
        self._woken = False

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:  # type: ignore[attr-defined]
            if not self._flag and not self._woken:  # type: ignore[attr-defined]
                self._cond.wait(timeout)  # type: ignore[attr-defined]
            self._woken = False
            return bool(self._flag)  # type: ignore[attr-defined]

    def wake(self) -> None:
        """End the current wait early, or the next one at once, leaving the event unset."""
        with self._cond:  # type: ignore[attr-defined]
            self._woken = True
            self._cond.notify_all()  # type: ignore[attr-defined]


class FollowUps:
    """Calls of ``call`` a little after each :meth:`after_end`, coalesced, on one thread.

    A run's end is told from inside its workflow, before DBOS marks the workflow done; a
    look at the queue at that moment still counts the run against the worker's
    concurrency and may take nothing. The looks these calls cause come once DBOS has
    (almost always) recorded the end, so a queued run waits for no poll.
    """

    def __init__(self, call: Callable[[], None], delays_s: tuple[float, ...]) -> None:
        self._call = call
        self._delays_s = delays_s
        self._due: list[float] = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def after_end(self) -> None:
        now = time.monotonic()
        with self._cond:
            if self._closed:
                return
            for delay in self._delays_s:
                due = now + delay
                # a call due within half this delay of this one serves both
                if not any(abs(other - due) < delay / 2 for other in self._due):
                    heapq.heappush(self._due, due)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dcbrain-queue-wakes",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._due or self._due[0] > time.monotonic()):
                    self._cond.wait(None if not self._due else self._due[0] - time.monotonic())
                if self._closed:
                    return
                now = time.monotonic()
                while self._due and self._due[0] <= now:
                    heapq.heappop(self._due)
            try:
                self._call()
            except Exception:  # best effort: the queue is polled anyway
                logging.getLogger(__name__).debug("waking the queue failed", exc_info=True)


def launch() -> None:
    """``DBOS.launch()``, with the stop event of its queue threads a :class:`WakeableEvent`
    (DBOS makes it in ``launch``; the queue threads get it as their first argument)."""
    import types

    import dbos._dbos as dbos_module

    wakeable = types.ModuleType("threading")
    wakeable.__dict__.update(threading.__dict__)
    wakeable.Event = WakeableEvent  # type: ignore[attr-defined]
    namespace = vars(dbos_module)
    real = namespace["threading"]
    namespace["threading"] = wakeable
    try:
        DBOS.launch()
    finally:
        namespace["threading"] = real


def wake_dequeuing(queue_name: str) -> bool:
    """Have DBOS look at ``queue_name`` now instead of at its next poll; ``False`` when no
    polling thread was found (or it cannot be woken; then it looks at its next poll, as
    it does when it was busy looking)."""
    stop_event = _queue_stop_event(queue_name)
    if not isinstance(stop_event, WakeableEvent):
        return False
    stop_event.wake()
    return True


def cap_dequeuing(queue_name: str, cap: Callable[[], int]) -> None:
    """Have this process take runs from ``queue_name`` only while it executes fewer than
    ``cap()`` of them (asked before each look at the queue, in DBOS's queue thread; 0
    skips the look's dequeue, the costly part)."""
    from dbos._dbos import _get_dbos_instance

    sys_db = _get_dbos_instance()._sys_db
    get_queue = getattr(sys_db, "get_queue", None)
    if get_queue is None:
        raise DBOSContractError("DBOS's system database has no get_queue any more: runs "
                                "cannot be spread fairly; pin dbos to the version dcbrain "
                                "was tested with")

    def capped(name: str, *args: Any, **kwargs: Any) -> Any:
        queue = get_queue(name, *args, **kwargs)
        if queue is not None and name == queue_name:
            if not hasattr(queue, "_worker_concurrency"):
                raise DBOSContractError("DBOS's Queue has no _worker_concurrency any more")
            queue._worker_concurrency = max(0, cap())  # 0: takes nothing this time
        return queue

    sys_db.get_queue = capped  # type: ignore[method-assign]


#: Seconds between DBOS's background jobs (delayed workflows, timeouts: dcbrain has none).
BACKGROUND_JOBS_S: Final = 30.0


def quiet_background_threads() -> None:
    """Before launch: DBOS's background jobs every :data:`BACKGROUND_JOBS_S` rather than
    every second, and no fast schedule polling at start (the config sets the usual one).
    A DBOS without these settings only costs more CPU while idle (the contract test says so)."""
    from dbos import _scheduler, _workflow_commands

    if hasattr(_workflow_commands, "_BACKGROUND_JOBS_INTERVAL_SEC"):
        _workflow_commands._BACKGROUND_JOBS_INTERVAL_SEC = BACKGROUND_JOBS_S
    if hasattr(_scheduler, "_STARTUP_FAST_POLL_DURATION_SEC"):
        _scheduler._STARTUP_FAST_POLL_DURATION_SEC = 0.0


def slow_internal_queues(polling_interval_s: float) -> None:
    """Have DBOS poll its own queues (the scheduler's, Kafka's; dcbrain queues nothing
    there) every ``polling_interval_s`` instead of every second."""
    from dbos._dbos import _get_dbos_instance

    registry = _get_dbos_instance()._registry
    for queue in registry.internal_queues():
        if not hasattr(queue, "_polling_interval_sec"):
            raise DBOSContractError("DBOS's Queue has no _polling_interval_sec any more")
        queue._polling_interval_sec = polling_interval_s


class _ExecutorSlot:
    """The run executor this process's workflows use (``None``: this process runs none)."""

    def __init__(self) -> None:
        self._executor: RunExecutor | None = None

    def install(self, executor: RunExecutor | None) -> None:
        self._executor = executor

    @property
    def executor(self) -> RunExecutor | None:
        return self._executor


#: One per process, as DBOS is.
EXECUTOR_SLOT: Final = _ExecutorSlot()

__all__ = [
    "DBOS",
    "EXECUTOR_SLOT",
    "PORTABLE_JSON",
    "QUEUE_THREAD_PREFIX",
    "DBOSClient",
    "DBOSConfig",
    "DBOSContractError",
    "EnqueueOptions",
    "WorkflowSerializationFormat",
    "cap_dequeuing",
    "database_errors",
    "launch",
    "migrate_system_database",
    "queue_is_polled",
    "quiet_background_threads",
    "recover_pending_workflows",
    "slow_internal_queues",
    "stop_dequeuing",
    "wait_until_polled",
    "wake_dequeuing",
]
