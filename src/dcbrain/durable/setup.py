"""Building the durable pieces a command needs from a config and a database URL."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Final

from dcbrain.config import Config
from dcbrain.durable._urls import is_postgres, sqlite_url
from dcbrain.durable.engine import DEAD_AFTER_S, DurableEngine, application_version
from dcbrain.durable.executor import DurableBrainFactory, RunExecutor
from dcbrain.durable.hub import EventHub
from dcbrain.durable.memory import PostgresMemory
from dcbrain.durable.store import DurableStore, PostgresDurableStore, SQLiteDurableStore
from dcbrain.memory import RunStore, SQLiteMemory, SQLiteRunStore

#: Seconds the database work of a process that executes runs waits for a database that
#: is down (a restart, a failover) before that run fails: an outage shorter than this
#: only pauses the runs. API nodes do not wait: they answer 503 at once.
OUTAGE_WAIT_S: Final = 120.0

#: Sets the application version of every process in place of the config's hash.
APP_VERSION_ENV: Final = "DCBRAIN_APP_VERSION"


def chosen_version(config: Config | None, app_version: str | None = None) -> str:
    """``app_version`` if given, else ``$DCBRAIN_APP_VERSION``, else the config's version.

    Naming versions (``v41``, a release tag) lets an operator tell the runs of one
    deployment from another's; every worker that may resume a run must have its version.
    """
    chosen = app_version or os.environ.get(APP_VERSION_ENV)
    if chosen:
        return chosen
    if config is None:
        raise ValueError(f"no application version: pass --app-version, set {APP_VERSION_ENV} "
                         "or give the config")
    return config_version(config)


def config_version(config: Config) -> str:
    """The application version of runs planned with ``config`` (its content and tool files)."""
    digest = hashlib.sha256(config.model_dump_json().encode())
    for tool_file in config.tools:
        path = config.resolve(tool_file)
        digest.update(path.read_bytes() if path.is_file() else b"")
    return application_version(digest.hexdigest())


def open_store(db: str | None, runs: RunStore | None, *,
               outage_wait_s: float = 0.0) -> tuple[str, DurableStore]:
    """The DBOS database URL and the durable store: PostgreSQL at ``db``, else beside ``runs``.

    Without ``db``, runs and events stay in the run store's file (as without durability)
    and DBOS's own tables and the call journals go to two files next to it.
    ``outage_wait_s``: how long the store waits out a database outage (PostgreSQL).
    """
    if db is not None:
        if not is_postgres(db):
            raise ValueError(f"--db must be a postgresql:// URL, not {db!r}")
        return db, PostgresDurableStore(db, outage_wait_s=outage_wait_s)
    if not isinstance(runs, SQLiteMemory | SQLiteRunStore) or runs.path == ":memory:":
        raise ValueError("durable runs without --db need the run store in an SQLite file")
    base = Path(runs.path)
    return (sqlite_url(base.with_name(base.name + "-dbos.sqlite")),
            SQLiteDurableStore(runs, base.with_name(base.name + "-journal.sqlite")))


def open_memory(db: str, *, outage_wait_s: float = 0.0) -> PostgresMemory:
    """Conversation memory in the PostgreSQL database ``db`` (``postgresql://…``)."""
    if not is_postgres(db):
        raise ValueError(f"--db must be a postgresql:// URL, not {db!r}")
    return PostgresMemory(db, outage_wait_s=outage_wait_s)


def build_engine(
    db_url: str,
    store: DurableStore,
    config: Config,
    factory: DurableBrainFactory | None,
    *,
    concurrency: int = 16,
    executor_id: str | None = None,
    app_version: str | None = None,
    dead_after_s: float = DEAD_AFTER_S,
) -> tuple[DurableEngine, EventHub]:
    """The engine (a worker when ``factory`` is given) and an event hub on ``store``;
    the application version as :func:`chosen_version` chooses it; ``dead_after_s``: the
    silence after which a worker's runs move to a live one."""
    executor = None if factory is None else RunExecutor(store, factory)
    engine = DurableEngine(db_url, store, app_version=chosen_version(config, app_version),
                           executor=executor, concurrency=concurrency,
                           executor_id=executor_id, dead_after_s=dead_after_s)
    hub = EventHub(store, listen_url=db_url if is_postgres(db_url) else None)
    return engine, hub
