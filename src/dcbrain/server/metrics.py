"""``/metrics``: this process's runs, calls and resources in Prometheus's text format.

:class:`Metrics` owns one registry per process. Counters and histograms are fed from the
typed events of every run of the process (:data:`dcbrain.runs.observers.run_observers`),
so a run does only a counter increment per call; gauges (queue depth, live workers, the
sandbox pool, event streams) are read when a scraper asks. ``serve`` answers
``GET /metrics`` (with the API's token unless ``[telemetry] metrics_open``); ``worker``
serves it on ``--metrics-port``, with the same token (``DCBRAIN_API_TOKEN``) when one is
set. Label values are clipped and their combinations per metric capped
(:data:`MAX_SERIES_PER_METRIC`): no run id is a label, and no name a plan or a provider
makes up can grow a scrape without bound.
"""

from __future__ import annotations

import hmac
import logging
import math
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dcbrain.events import (
    BrainRunStarted,
    CallFinished,
    ErrorEvent,
    Event,
    Final,
    LLMCallFinished,
    PlanCallFinished,
    PlanFinished,
)
from dcbrain.runs.observers import RunObservers, run_observers
from dcbrain.server.app import error_response

logger = logging.getLogger("dcbrain.server")

#: Run and plan durations: a plan is seconds, a run up to the default 20 minute timeout.
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200)
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
#: Label combinations one metric keeps; past it, new ones are counted under :data:`OTHER`
#: (a planner's or a provider's made-up tool or model names cannot grow a scrape).
MAX_SERIES_PER_METRIC = 200
#: The label value of what is past :data:`MAX_SERIES_PER_METRIC`.
OTHER = "_other"
#: Characters a label value keeps.
MAX_LABEL_CHARS = 128


class Metrics:
    """The metrics of one process, and the observer that feeds them from run events."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.runs_started = Counter("dcbrain_runs_started", "Runs this process started.",
                                    registry=r)
        self.runs_finished = Counter("dcbrain_runs_finished", "Runs that ended here.",
                                     ["status", "reason"], registry=r)
        self.run_duration = Histogram("dcbrain_run_duration_seconds", "A run's duration.",
                                      ["status"], buckets=DURATION_BUCKETS, registry=r)
        self.plan_duration = Histogram("dcbrain_plan_duration_seconds",
                                       "A plan's execution time.", ["ok"],
                                       buckets=DURATION_BUCKETS, registry=r)
        self.llm_calls = Counter("dcbrain_llm_calls", "LLM calls.",
                                 ["role", "model", "status"], registry=r)
        self.llm_tokens = Counter("dcbrain_llm_tokens", "LLM tokens.",
                                  ["role", "model", "kind"], registry=r)
        self.tool_calls = Counter("dcbrain_tool_calls", "Tool calls.",
                                  ["tool", "status", "reused"], registry=r)
        self.tool_errors = Counter("dcbrain_tool_errors", "Tool calls that failed.",
                                   ["tool"], registry=r)
        self.tool_duration = Histogram("dcbrain_tool_call_duration_seconds",
                                       "A tool call's duration.", ["tool"],
                                       buckets=CALL_BUCKETS, registry=r)
        self.run_errors = Counter("dcbrain_run_errors", "Error events of runs.", ["source"],
                                  registry=r)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._series: dict[int, int] = {}
        self._lock = threading.Lock()
        self._pool_gauges()

    # -- events --------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        """Count ``event`` (a run observer: it runs on the thread the event happened on)."""
        child = self._child
        match event.payload:
            case CallFinished(kind="tool") as call:
                reused = "true" if isinstance(call, PlanCallFinished) and call.reused \
                    else "false"
                child(self.tool_calls, call.name, call.status, reused).inc()
                if call.status == "error":
                    child(self.tool_errors, call.name).inc()
                if reused == "false":
                    child(self.tool_duration, call.name).observe(call.duration_s)
            case LLMCallFinished() as llm:
                child(self.llm_calls, llm.phase, llm.model, llm.status).inc()
                child(self.llm_tokens, llm.phase, llm.model, "prompt").inc(llm.prompt_tokens)
                child(self.llm_tokens, llm.phase, llm.model, "completion").inc(
                    llm.completion_tokens)
            case PlanFinished() as plan if plan.duration_s is not None:
                child(self.plan_duration, "true" if plan.ok else "false").observe(
                    plan.duration_s)
            case BrainRunStarted():
                self.runs_started.inc()
            case Final() as final:
                child(self.runs_finished, final.status, final.reason or "").inc()
                if final.duration_s is not None:
                    child(self.run_duration, final.status).observe(final.duration_s)
            case ErrorEvent() as error:
                child(self.run_errors, error.source).inc()

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept: the library checks and locks on every lookup.

        Values are clipped to :data:`MAX_LABEL_CHARS`; a metric with
        :data:`MAX_SERIES_PER_METRIC` label combinations counts new ones as :data:`OTHER`.
        """
        labels = tuple(str(label)[:MAX_LABEL_CHARS] for label in labels)
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            with self._lock:
                count = self._series.get(id(metric), 0)
                if count >= MAX_SERIES_PER_METRIC:
                    labels = (OTHER,) * len(labels)
                    key = (id(metric), labels)
                    found = self._children.get(key)
                if found is None:
                    found = self._children[key] = metric.labels(*labels)
                    self._series[id(metric)] = count + 1
        return found

    def observe_runs(self, observers: RunObservers = run_observers) -> Callable[[], None]:
        """Count the events of every run of this process; returns what stops it."""
        return observers.add(self.observe)

    # -- read when scraped ---------------------------------------------------------------

    def gauge(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge whose value ``read`` gives at each scrape (NaN when it fails)."""
        Gauge(name, documentation, registry=self.registry).set_function(_guarded(name, read))

    def _pool_gauges(self) -> None:
        from dcbrain.tfplan.sandbox.pool import current_pool

        def stat(name: str) -> Callable[[], float]:
            def read() -> float:
                pool = current_pool()
                return 0.0 if pool is None else float(pool.stats()[name])
            return read

        self.gauge("dcbrain_sandbox_workers", "Sandbox processes, idle or busy.", stat("size"))
        self.gauge("dcbrain_sandbox_workers_busy", "Sandbox processes running a plan.",
                   stat("busy"))
        self.gauge("dcbrain_sandbox_restarts", "Sandbox processes killed and replaced "
                   "(a plan overran or was stopped, or the process ran its 500 plans).",
                   stat("restarts"))

    def watch_durable(self, store: Any) -> None:
        """Queue depth and live workers, read from the cluster's PostgreSQL store."""
        from dcbrain.durable.stats import live_workers, queued_runs

        self.gauge("dcbrain_queue_depth", "Runs queued and not started, in the cluster.",
                   lambda: float(queued_runs(store)))
        self.gauge("dcbrain_workers_live", "Workers whose heartbeat is recent.",
                   lambda: float(live_workers(store)))

    def watch_server(self, active_runs: Callable[[], int],
                     open_streams: Callable[[], int]) -> None:
        """What a server holds: conversations with a run, and open event streams."""
        self.gauge("dcbrain_runs_active", "Conversations with a run in flight.",
                   lambda: float(active_runs()))
        self.gauge("dcbrain_sse_streams", "Event streams open.", lambda: float(open_streams()))

    def exposition(self) -> bytes:
        """The registry in Prometheus's text format."""
        return generate_latest(self.registry)

    def serve(self, port: int, host: str, *, token: str | None = None) -> Callable[[], None]:
        """Answer ``GET /metrics`` on ``host:port`` from a thread; returns what stops it.

        ``token`` (unless ``None``) is asked for as ``Authorization: Bearer``, as by
        :meth:`endpoint`."""
        exposition = self.exposition

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                    self._answer(404, b'{"error":"not_found","detail":"GET /metrics"}',
                                 "application/json")
                elif token is not None and not bearer_matches(
                        self.headers.get("Authorization", ""), token):
                    self._answer(401, b'{"error":"unauthorized","detail":"send '
                                 b'Authorization: Bearer <token>"}', "application/json",
                                 {"WWW-Authenticate": 'Bearer realm="dcbrain"'})
                else:
                    self._answer(200, exposition(), CONTENT_TYPE_LATEST)

            def _answer(self, status: int, body: bytes, media_type: str,
                        headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # a scrape every few seconds is not worth a log line

        server = ThreadingHTTPServer((host, port), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="dcbrain-metrics",
                                  daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

        return stop

    def endpoint(self, token: str | None) -> Callable[[Request], Any]:
        """The ``GET /metrics`` endpoint of a server; ``token`` (unless ``None``) is asked
        for as ``Authorization: Bearer``, as by the API's other reads."""

        async def metrics(request: Request) -> Response:
            if token is not None and not bearer_matches(
                    request.headers.get("authorization", ""), token):
                return error_response(
                    401, "unauthorized", "send Authorization: Bearer <token>",
                    headers={"WWW-Authenticate": 'Bearer realm="dcbrain"'})
            return Response(self.exposition(), media_type=CONTENT_TYPE_LATEST)

        return metrics


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` header value is ``Bearer <token>``."""
    scheme, _, given = authorization.partition(" ")
    return scheme.lower() == "bearer" and bool(given.strip()) and hmac.compare_digest(
        given.strip().encode(), token.encode())


def is_cluster_store(store: object) -> bool:
    """Whether ``store`` is a cluster's PostgreSQL store (a Python without DBOS has none)."""
    try:
        from dcbrain.durable.store import PostgresDurableStore
    except ImportError:
        return False
    return isinstance(store, PostgresDurableStore)


def _guarded(name: str, read: Callable[[], float]) -> Callable[[], float]:
    def value() -> float:
        try:
            return read()
        except Exception as exc:  # a database away: the scrape still answers
            logger.warning("metric %s could not be read: %s", name, exc)
            return math.nan
    return value


def serve_metrics(app: Starlette, metrics: Metrics, *, token: str | None,
                  open_metrics: bool) -> Callable[[], None]:
    """Answer ``GET /metrics`` on ``app`` from ``metrics``, fed by this process's runs, with
    the gauges of the app's runs and streams (and the cluster's, with a PostgreSQL store).
    Returns what stops counting this process's runs."""
    runs = app.state.runs
    streams = app.state.streams
    metrics.watch_server(lambda: runs.active_count, lambda: streams.open_count)
    store = getattr(runs, "store", None)
    if store is not None and is_cluster_store(store):
        metrics.watch_durable(store)
    app.router.routes.append(Route("/metrics", metrics.endpoint(None if open_metrics else token),
                                   methods=["GET"]))
    return metrics.observe_runs()
