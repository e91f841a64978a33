"""DBOS behind one adapter: the only module of dcbrain that imports ``dbos``.

DBOS's public API covers most of what durable runs need; four things it does not, and
this module is where they are reached, so an upgrade that moves them breaks here (and in
``tests/durable/test_dbos_contract.py``) rather than somewhere in the engine:

- handing a dead executor's pending workflows back to the queue (``DBOS`` only does it for
  its Conductor service, through a private class method);
- knowing that a queue registered after launch is polled (DBOS starts the queue's thread at
  its next look at the queue table and says nothing; the thread's name is DBOS's);
- stopping this process from starting queued workflows while the ones it runs go on (a
  draining worker: DBOS stops polling only in ``destroy``, which abandons running ones;
  the queue threads share one stop event, passed to them as their first argument);
- reaching this process's run executor from a workflow function (DBOS registers workflows as
  module-level functions, one DBOS per process, so the executor lives in a process-wide slot).

The dependency is pinned to the minor version this module was checked against.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
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
    name = QUEUE_THREAD_PREFIX + queue_name
    for thread in threading.enumerate():
        if thread.name != name:
            continue
        arguments = getattr(thread, "_args", ())
        stop_event = arguments[0] if arguments else None
        if not isinstance(stop_event, threading.Event):
            raise DBOSContractError(
                f"DBOS's thread {name} no longer takes its stop event as first argument: a "
                "draining worker cannot stop taking runs; pin dbos to the version dcbrain "
                "was tested with")
        stop_event.set()
        return True
    return False


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
    "database_errors",
    "migrate_system_database",
    "queue_is_polled",
    "recover_pending_workflows",
    "stop_dequeuing",
    "wait_until_polled",
]
