"""``dcbrain worker``: execute durable runs from a PostgreSQL queue (DBOS).

SIGTERM (or Ctrl-C) drains the worker: it takes no more runs from the queue, lets the
runs in flight finish for up to ``--drain-timeout`` seconds, then stops; the runs still
in flight stay pending, resumed by this worker's next start under the same
``--executor-id`` or by a live peer once this worker's heartbeat is stale. A second
signal ends the wait at once.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
from typing import Annotated

import typer

from dcbrain.cli._config import (
    AppVersionOption,
    ConfigOption,
    config_errors_exit,
    load_config_or_exit,
)
from dcbrain.cli._output import fail_usage
from dcbrain.server.drain import DEFAULT_DRAIN_TIMEOUT_S


def worker(
    db: Annotated[str, typer.Option("--db", help="PostgreSQL URL shared by workers and API "
                                    "nodes (postgresql://user@host:port/dbname).")],
    config: ConfigOption = None,
    concurrency: Annotated[int, typer.Option(help="Runs this worker executes at once.")] = 16,
    executor_id: Annotated[
        str | None,
        typer.Option(help="A stable id (e.g. the pod name): a restart under the same id "
                     "resumes its runs at once. Default: host-pid-random."),
    ] = None,
    app_version: AppVersionOption = None,
    drain_timeout: Annotated[
        float, typer.Option(help="Seconds a stopping worker (SIGTERM) lets its runs in "
                            "flight finish; the rest resume elsewhere or at restart.")
    ] = DEFAULT_DRAIN_TIMEOUT_S,
) -> None:
    """Execute runs from the queue until SIGTERM or Ctrl-C, then drain: runs in flight
    finish within --drain-timeout, or resume elsewhere."""
    if not (math.isfinite(drain_timeout) and drain_timeout >= 0):
        fail_usage(f"--drain-timeout must be a number of seconds >= 0, not {drain_timeout}")
    try:
        from dcbrain.durable.setup import build_engine, open_store
    except ImportError:
        sys.stderr.write("error: dcbrain worker needs DBOS, which cannot be imported here; "
                         'reinstall dcbrain with its dependencies (pip install -e ".[local]")\n')
        raise typer.Exit(2) from None
    from dcbrain.composition import brain_factory_from_config, retention_periods, shared_memory
    from dcbrain.runs.retention import RetentionSchedule, prune_runs

    loaded = load_config_or_exit(config)
    with config_errors_exit():
        try:
            memory = shared_memory(loaded, db)  # every worker reads and writes the same
            runs, factory = brain_factory_from_config(loaded, memory)
            db_url, store = open_store(db, runs)
        except (OSError, ValueError) as exc:
            fail_usage(str(exc))
    engine, _ = build_engine(db_url, store, loaded, factory, concurrency=concurrency,
                             executor_id=executor_id, app_version=app_version)
    stop, hurry = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        (hurry if stop.is_set() else stop).set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    engine.start()
    periods = retention_periods(loaded)
    retention = None if periods is None else RetentionSchedule(
        lambda keep_s: prune_runs(store, keep_s, forget_workflows=engine.forget), *periods)
    if retention is not None:
        retention.start()
    engine.wait_warm()
    sys.stderr.write(f"dcbrain worker {engine.executor_id} ready (version "
                     f"{engine.app_version}, concurrency {concurrency})\n")
    stop.wait()
    in_flight = len(engine.in_flight())
    sys.stderr.write(f"dcbrain worker {engine.executor_id} draining: no new runs; {in_flight} "
                     f"in flight get up to {drain_timeout:g} s\n")
    left = engine.drain(drain_timeout, hurry)
    sys.stderr.write(f"dcbrain worker {engine.executor_id} stopping: {len(left)} run(s) "
                     "left to resume\n" if left else
                     f"dcbrain worker {engine.executor_id} stopping: every run in flight ended\n")
    if retention is not None:
        retention.stop()
    engine.stop()
    store.close()
    if memory is not None:
        memory.close()


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
