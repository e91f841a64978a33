"""Durable-run test harness: a backend (URL + store), a worker in this process, waits."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcbrain.durable import DurableStore
from dcbrain.memory import RunRecord

TERMINAL = frozenset({"succeeded", "failed", "aborted", "interrupted"})


@dataclass
class Backend:
    """A database for durable runs: its URL and the store on it."""

    name: str
    url: str
    store: DurableStore


@contextmanager
def running_engine(backend: Backend, factory: Callable[[], Any], *,
                   concurrency: int = 8, supersede_grace_s: float = 5.0) -> Iterator[Any]:
    """A worker in this process (DBOS launched) on ``backend``."""
    from dcbrain.durable import DurableEngine, RunExecutor, application_version

    executor = RunExecutor(backend.store, factory, supersede_grace_s=supersede_grace_s)
    engine = DurableEngine(backend.url, backend.store, app_version=application_version("t"),
                           executor=executor, concurrency=concurrency)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop()


def submit(engine: Any, store: DurableStore, conversation_id: str, question: str) -> str:
    run_id = uuid.uuid4().hex
    store.save_run(run_id, conversation_id, "queued", {"question": question})
    engine.enqueue(run_id, conversation_id, question)
    return run_id


def wait_until_ended(store: DurableStore, run_id: str, timeout_s: float = 30.0) -> RunRecord:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = store.get_run(run_id)
        if record is not None and record.status in TERMINAL:
            return record
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} did not end within {timeout_s} s: "
                         f"{store.get_run(run_id)}")


@contextmanager
def durable_server(backend: Backend, factory: Callable[[], Any] | None, memory: Any, *,
                   supersede_grace_s: float = 5.0, list_conversations: bool = False,
                   concurrency: int = 16, approval_sweep_s: float = 5.0) -> Iterator[Any]:
    """The HTTP server on durable runs (a worker too when ``factory`` is given)."""
    from dcbrain.config.runtime import Durable, Runtime
    from dcbrain.durable import DurableEngine, EventHub, RunExecutor, application_version
    from dcbrain.durable._urls import is_postgres
    from dcbrain.server import ServerSettings, create_app
    from dcbrain.server.testing import serve_in_thread
    from support.server_app import Api

    executor = None if factory is None else RunExecutor(
        backend.store, factory, supersede_grace_s=supersede_grace_s)
    engine = DurableEngine(backend.url, backend.store, app_version=application_version("t"),
                           executor=executor, concurrency=concurrency)
    hub = EventHub(backend.store, listen_url=backend.url if is_postgres(backend.url) else None)
    app = create_app(Runtime(memory=memory, durable=Durable(engine, backend.store, hub)),
                     ServerSettings(list_conversations=list_conversations,
                                    approval_sweep_s=approval_sweep_s))
    with serve_in_thread(app) as base_url:
        api = Api(base_url)
        api.engine = engine
        try:
            yield api
        finally:
            api.http.close()


@contextmanager
def held_server(backend: Backend, counting: Any, directory: Path,
                **options: Any) -> Iterator[Any]:
    """The durable server on ``counting``'s brain (conversations in ``directory``), its held
    tools waiting until the test sets ``counting.hold``."""
    from dcbrain import SQLiteMemory

    counting.hold = threading.Event()
    memory = SQLiteMemory(directory / "conversations.db")
    try:
        with durable_server(backend, counting.brain, memory, **options) as api:
            yield api
    finally:
        memory.close()


@contextmanager
def waiting_run(backend: Backend, counting: Any, directory: Path,
                **server_options: Any) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """A durable server whose counting brain asks a person before ``step_two``, and a
    run of it (conversation ``c1``) waiting for that decision: ``(api, run_id, run)``."""
    from dcbrain import SQLiteMemory

    counting.approval = {"step_two"}
    memory = SQLiteMemory(directory / "conversations.db")
    try:
        with durable_server(backend, counting.brain, memory, **server_options) as api:
            run_id = api.send("c1", "count")
            yield api, run_id, api.wait_for_status(run_id, "waiting")
    finally:
        memory.close()


def age_runs(backend: Backend, run_ids: list[str], seconds: float) -> None:
    """Move the runs' creation and last change ``seconds`` into the past."""
    from dcbrain.durable import SQLiteDurableStore

    when = time.time() - seconds
    if isinstance(backend.store, SQLiteDurableStore):
        path = backend.store.runs.path  # type: ignore[attr-defined]
        with sqlite3.connect(path) as conn:
            conn.executemany("UPDATE runs SET updated_at = ?, created_at = ? WHERE run_id = ?",
                             [(when, when, run_id) for run_id in run_ids])
        return
    import psycopg

    with psycopg.connect(backend.url, autocommit=True) as conn:
        conn.execute("UPDATE dcbrain_runs SET updated_at = %s, created_at = %s "
                     "WHERE run_id = ANY(%s)", (when, when, run_ids))
