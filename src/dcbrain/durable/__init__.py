"""Durable runs: each run is a DBOS workflow on SQLite or PostgreSQL.

A run survives the death of the process that executes it: another execution resumes it.
Workers on one PostgreSQL database share a queue (one run at a time per conversation);
API nodes enqueue runs, follow their events and send abort/supersede to the worker that
runs them. See ``docs/deploy.md``. DBOS is reached only through ``_dbos.py``; the rest of
dcbrain imports this package only when durable runs are used.
"""

from dcbrain.durable.control import CONTROL_CHANNEL, ControlChannel
from dcbrain.durable.engine import DurableEngine, application_version
from dcbrain.durable.executor import DurableBrainFactory, RunExecutor
from dcbrain.durable.hub import EventHub
from dcbrain.durable.journal import RecordedMemory, RunJournal
from dcbrain.durable.memory import PostgresMemory
from dcbrain.durable.store import (
    EVENTS_CHANNEL,
    DurableStore,
    PostgresDurableStore,
    SQLiteDurableStore,
)
from dcbrain.durable.workers import WorkerRegistry, stranded_runs
from dcbrain.durable.writer import StoreWriter
from dcbrain.exceptions import DurableRunError, JournalDivergence, StoreWriteError

__all__ = [
    "CONTROL_CHANNEL",
    "EVENTS_CHANNEL",
    "ControlChannel",
    "DurableBrainFactory",
    "DurableEngine",
    "DurableRunError",
    "DurableStore",
    "EventHub",
    "JournalDivergence",
    "PostgresDurableStore",
    "PostgresMemory",
    "RecordedMemory",
    "RunExecutor",
    "RunJournal",
    "SQLiteDurableStore",
    "StoreWriteError",
    "StoreWriter",
    "WorkerRegistry",
    "application_version",
    "stranded_runs",
]
