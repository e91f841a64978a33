"""``dcbrain worker``: execute durable runs from a PostgreSQL queue (DBOS)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Annotated

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit
from dcbrain.cli._output import fail_usage


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
) -> None:
    """Execute runs from the queue until SIGTERM or Ctrl-C; runs in flight resume elsewhere."""
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
                             executor_id=executor_id)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
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
    if retention is not None:
        retention.stop()
    engine.stop()
    store.close()
    if memory is not None:
        memory.close()


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
