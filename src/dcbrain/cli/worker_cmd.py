"""``dcbrain worker``: execute durable runs from a PostgreSQL queue (DBOS).

SIGTERM (or Ctrl-C) drains the worker: it takes no more runs from the queue, lets the
runs in flight finish for up to ``--drain-timeout`` seconds, then stops; the runs still
in flight go back to the queue at once, for a live peer (or this worker's next start)
to resume. A second signal ends the wait at once. A worker started before its database
waits for it up to ``--db-wait`` seconds, logging while it waits.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from dcbrain.cli._config import (
    AppVersionOption,
    ConfigOption,
    config_errors_exit,
    load_config_or_exit,
)
from dcbrain.cli._observe import (
    DEFAULT_DB_WAIT_S,
    DbWaitOption,
    LogFormatOption,
    install_log_format,
    say,
    wait_for_database_or_exit,
)
from dcbrain.cli._output import fail_usage
from dcbrain.server.connections import DEFAULT_DRAIN_TIMEOUT_S

if TYPE_CHECKING:
    from dcbrain.config.runtime import Runtime

#: ``--takeover-after`` (the engine's ``DEAD_AFTER_S``, not imported: DBOS may be missing).
DEFAULT_TAKEOVER_AFTER_S = 6.0


def worker(
    db: Annotated[str, typer.Option("--db", help="PostgreSQL URL shared by workers and API "
                                    "nodes (postgresql://user@host:port/dbname).")],
    config: ConfigOption = None,
    concurrency: Annotated[
        int, typer.Option(help="Runs this worker executes at once (the cluster's capacity "
                          "is the sum over its workers).")
    ] = 16,
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
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Answer GET /metrics (Prometheus) on this port; off by default.",
                     show_default=False),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Address for --metrics-port (it asks for DCBRAIN_API_TOKEN "
                          "when that is set, unless [telemetry] metrics_open).")
    ] = "127.0.0.1",
    log_format: LogFormatOption = None,
    db_wait: DbWaitOption = DEFAULT_DB_WAIT_S,
    takeover_after: Annotated[
        float, typer.Option(help="Seconds of silence (no heartbeat) after which a worker "
                            "counts as dead and a live worker of its version takes its "
                            "runs; the takeover completes within this plus about 2 s.")
    ] = DEFAULT_TAKEOVER_AFTER_S,
) -> None:
    """Execute runs from the queue until SIGTERM or Ctrl-C, then drain: runs in flight
    finish within --drain-timeout, or resume elsewhere."""
    if not (math.isfinite(drain_timeout) and drain_timeout >= 0):
        fail_usage(f"--drain-timeout must be a number of seconds >= 0, not {drain_timeout}")
    if not (math.isfinite(takeover_after) and takeover_after >= 1):
        fail_usage(f"--takeover-after must be a number of seconds >= 1, not {takeover_after}")
    try:
        from dcbrain.durable.engine import new_executor_id
        from dcbrain.durable.setup import OUTAGE_WAIT_S
    except ImportError:
        sys.stderr.write("error: dcbrain worker needs DBOS, which cannot be imported here; "
                         'reinstall dcbrain with its dependencies (pip install -e ".[local]")\n')
        raise typer.Exit(2) from None
    from dcbrain.config.runtime import AppSettings, build_runtime
    from dcbrain.exceptions import DatabaseUnavailable

    loaded = load_config_or_exit(config)
    if concurrency < 1:
        fail_usage(f"--concurrency must be at least 1, not {concurrency}")
    executor_id = executor_id or new_executor_id()
    install_log_format(log_format, worker=executor_id)
    wait_for_database_or_exit(db, db_wait, "worker")
    with config_errors_exit():
        try:  # every worker reads and writes the same; its runs wait out a database outage
            runtime = build_runtime(AppSettings(
                loaded, db=db, outage_wait_s=OUTAGE_WAIT_S, role="worker", durable="on",
                durable_for="dcbrain worker", concurrency=concurrency,
                executor_id=executor_id, app_version=app_version,
                dead_after_s=takeover_after))
        except (OSError, ValueError, DatabaseUnavailable) as exc:
            fail_usage(str(exc))
    with runtime:
        _work(runtime, concurrency, drain_timeout, metrics_port, metrics_host)


def _work(runtime: Runtime, concurrency: int, drain_timeout: float,
          metrics_port: int | None, metrics_host: str) -> None:
    """Execute runs on ``runtime``'s engine until a signal, then drain and stop."""
    from dcbrain.runs.retention import RetentionSchedule, prune_runs
    from dcbrain.server.app import API_TOKEN_ENV

    assert runtime.durable is not None and runtime.settings is not None
    engine, store = runtime.durable.engine, runtime.durable.store
    stop, hurry = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        (hurry if stop.is_set() else stop).set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    metrics_open = runtime.settings.config.telemetry.metrics_open
    token = None if metrics_open else os.environ.get(API_TOKEN_ENV) or None
    stop_metrics = _serve_metrics(store, metrics_port, metrics_host, token)
    engine.start()
    periods = runtime.retention
    retention = None if periods is None else RetentionSchedule(
        lambda keep_s: prune_runs(store, keep_s, forget_workflows=engine.forget), *periods)
    if retention is not None:
        retention.start()
    engine.wait_warm()
    say(f"dcbrain worker {engine.executor_id} ready (version {engine.app_version}, "
        f"concurrency {concurrency})")
    stop.wait()
    in_flight = len(engine.in_flight())
    say(f"dcbrain worker {engine.executor_id} draining: no new runs; {in_flight} in flight "
        f"get up to {drain_timeout:g} s")
    left = engine.drain(drain_timeout, hurry)
    say(f"dcbrain worker {engine.executor_id} stopping: {len(left)} run(s) handed back to the "
        "queue" if left else
        f"dcbrain worker {engine.executor_id} stopping: every run in flight ended")
    if retention is not None:
        retention.stop()
    engine.stop()
    stop_metrics()


def _serve_metrics(store: object, port: int | None, host: str,
                   token: str | None) -> Callable[[], None]:
    """This worker's ``/metrics`` on ``host:port`` (nothing without a port), asking for
    ``token`` unless it is ``None``."""
    if port is None:
        return lambda: None
    from dcbrain.server.metrics import Metrics, is_cluster_store

    metrics = Metrics()
    if is_cluster_store(store):
        metrics.watch_durable(store)
    stop_observing = metrics.observe_runs()
    try:
        stop_serving = metrics.serve(port, host, token=token)
    except OSError as exc:
        fail_usage(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}")

    def stop() -> None:
        stop_observing()
        stop_serving()

    return stop


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)
