"""``dcbrain worker``: execute durable runs from a PostgreSQL queue (DBOS)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Annotated

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit
from dcbrain.cli._observe import LogFormatOption, observe_process
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
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Answer GET /metrics (Prometheus) on this port; off by default.",
                     show_default=False),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address for --metrics-port (no token is asked there).")
    ] = "127.0.0.1",
    log_format: LogFormatOption = None,
) -> None:
    """Execute runs from the queue until SIGTERM or Ctrl-C; runs in flight resume elsewhere."""
    try:
        from dcbrain.durable.setup import build_engine, open_store
    except ImportError:
        sys.stderr.write("error: dcbrain worker needs DBOS, which cannot be imported here; "
                         'reinstall dcbrain with its dependencies (pip install -e ".[local]")\n')
        raise typer.Exit(2) from None
    from dcbrain.composition import brain_factory_from_config, shared_memory

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
    observe_process(loaded, "worker", log_format, worker=engine.executor_id)
    stop_metrics = _serve_metrics(store, metrics_port, metrics_host)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    engine.start()
    engine.wait_warm()
    sys.stderr.write(f"dcbrain worker {engine.executor_id} ready (version "
                     f"{engine.app_version}, concurrency {concurrency})\n")
    stop.wait()
    engine.stop()
    stop_metrics()
    store.close()
    if memory is not None:
        memory.close()


def _serve_metrics(store: object, port: int | None, host: str) -> Callable[[], None]:
    """This worker's ``/metrics`` on ``host:port`` (nothing without a port)."""
    if port is None:
        return lambda: None
    from dcbrain.server.metrics import Metrics, is_cluster_store

    metrics = Metrics()
    if is_cluster_store(store):
        metrics.watch_durable(store)
    stop_observing = metrics.observe_runs()
    try:
        stop_serving = metrics.serve(port, host)
    except OSError as exc:
        fail_usage(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}")

    def stop() -> None:
        stop_observing()
        stop_serving()

    return stop


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
