"""``dcbrain serve``: the HTTP server and web page for the brain a config file describes.

Exit codes: 2 for a bad config, a port that cannot be bound, or a non-loopback address
without a token (unless ``--insecure-no-token``); 130 once stopped with Ctrl-C (after a
graceful shutdown).

SIGTERM or Ctrl-C drains the server first (:mod:`dcbrain.server.drain`): new messages get
``503``, runs in flight get ``--drain-timeout`` seconds to finish, event streams their end.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import math
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from dcbrain.cli._config import ConfigOption, load_config_or_exit
from dcbrain.cli._observe import (
    DEFAULT_DB_WAIT_S,
    DbWaitOption,
    LogFormatOption,
    observe_process,
    say,
    wait_for_database_or_exit,
)
from dcbrain.server.connections import DEFAULT_DRAIN_TIMEOUT_S, ConnectionLimits

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.config import Config
    from dcbrain.memory import Memory, RunStore
    from dcbrain.server.service import RunService

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on ``host:port``; ``OSError`` says why it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _bind_problem(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another dcbrain serve?); stop that "
                "process or choose another port with --port")
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on {host}:{port} (ports below 1024 need privileges)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


def serve(
    config: ConfigOption = None,
    host: Annotated[str, typer.Option(help="Address to bind; keep the loopback default "
                                      "unless a proxy or a token protects the server.")]
    = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = DEFAULT_PORT,
    max_concurrent_runs: Annotated[
        int | None, typer.Option(help="Conversations that may have a run at once in this "
                                 "process (429 beyond; default 16). Not for --role api: "
                                 "workers' --concurrency is the cluster's capacity.",
                                 show_default=False)
    ] = None,
    list_conversations: Annotated[
        bool, typer.Option("--list-conversations",
                           help="Answer GET /v1/conversations (off: a conversation is only "
                           "reachable through its id).")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option("--db", help="PostgreSQL URL shared with workers; "
                     "default: durable runs in the SQLite memory file, one process.",
                     show_default=False),
    ] = None,
    role: Annotated[
        str, typer.Option(help="all: serve and execute runs; api: only accept, enqueue and "
                          "stream (workers execute; needs --db).")
    ] = "all",
    max_connections: Annotated[
        int, typer.Option(help="Open connections at most; beyond, the one waiting longest "
                          "for a request is closed (503 when all are busy).")
    ] = ConnectionLimits.max_connections,
    head_timeout: Annotated[
        float, typer.Option(help="Seconds for a request's line and headers to arrive (after "
                            "connecting or the last response); then the connection closes.")
    ] = ConnectionLimits.head_timeout_s,
    body_timeout: Annotated[
        float, typer.Option(help="Seconds for a request's body to arrive after its headers.")
    ] = ConnectionLimits.body_timeout_s,
    drain_timeout: Annotated[
        float, typer.Option(help="Seconds a stopping server (SIGTERM, Ctrl-C) lets its runs "
                            "in flight finish while refusing new ones (503); then in-process "
                            "runs end interrupted and durable ones resume at the next start.")
    ] = DEFAULT_DRAIN_TIMEOUT_S,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option("--forwarded-allow-ips",
                     help="Proxies (comma-separated IPs or CIDR networks, * for any) whose "
                     "X-Forwarded-For names the client; default: none, the client is the "
                     "socket's peer (what per-client limits count).", show_default=False),
    ] = None,
    insecure_no_token: Annotated[
        bool, typer.Option("--insecure-no-token",
                           help="Serve a non-loopback address without DCBRAIN_API_TOKEN "
                           "(anyone who reaches it can run the brain).")
    ] = False,
    log_format: LogFormatOption = None,
    db_wait: DbWaitOption = DEFAULT_DB_WAIT_S,
) -> None:
    """Serve the HTTP API (live events over SSE) and the web page at http://HOST:PORT/.

    Exit codes: 2 bad config, port in use, or a non-loopback address without a token;
    130 stopped with Ctrl-C.
    """
    from dcbrain.config import ConfigError
    from dcbrain.config.runtime import AppSettings, build_runtime
    from dcbrain.exceptions import DatabaseUnavailable
    from dcbrain.runs.retention import DEFAULT_CHECK_EVERY_S
    from dcbrain.server.app import API_TOKEN_ENV, LOOPBACK_HOSTS, create_app
    from dcbrain.server.connections import fit_open_file_limit
    from dcbrain.server.drain import SHUTDOWN_GRACE_S, DrainingServer
    from dcbrain.server.metrics import Metrics, serve_metrics
    from dcbrain.server.protocol import trusted_proxies, uvicorn_config
    from dcbrain.server.runs import DEFAULT_MAX_CONCURRENT_RUNS
    from dcbrain.server.settings import ServerSettings

    loaded = load_config_or_exit(config)
    observe_process(loaded, "serve", log_format)
    try:
        limits = ConnectionLimits(max_connections=max_connections,
                                  head_timeout_s=head_timeout, body_timeout_s=body_timeout)
        proxies = trusted_proxies(forwarded_allow_ips) or None
    except ValueError as exc:
        _fail(str(exc))
    if not (math.isfinite(drain_timeout) and drain_timeout >= 0):
        _fail(f"--drain-timeout must be a number of seconds >= 0, not {drain_timeout}")
    limits = fit_open_file_limit(limits)
    token = os.environ.get(API_TOKEN_ENV) or None
    loopback = is_loopback(host)
    if not loopback and token is None:
        if not insecure_no_token:
            _fail(f"refusing to serve on {host} without {API_TOKEN_ENV}: anyone who can reach "
                  f"this address could run the brain and read conversations. Set "
                  f"{API_TOKEN_ENV}, or pass --insecure-no-token if something else (a proxy, "
                  "a firewall) protects it")
        say(f"warning: serving on {host} without {API_TOKEN_ENV} (--insecure-no-token): "
            "anyone who can reach this address can run the brain and read conversations",
            level=logging.WARNING)
    try:  # before the (slow) brain is built, and before any URL is announced
        sock = bind(host, port)
    except OSError as exc:
        _fail(_bind_problem(host, port, exc))
    wait_for_database_or_exit(db, db_wait, "API node" if role == "api" else "server")
    runs: RunService | None
    cap = max_concurrent_runs or DEFAULT_MAX_CONCURRENT_RUNS
    try:
        if role not in ("all", "api"):
            raise ValueError(f"--role must be 'all' or 'api', not {role!r}")
        if role == "api" and max_concurrent_runs is not None:
            raise ValueError("--max-concurrent-runs is not for --role api: each worker's "
                             "--concurrency sets how many runs it executes at once")
        # an API node has no brain and no local file: the workers run, the database keeps
        runtime = build_runtime(AppSettings(
            loaded, db=db, brain=role == "all",
            outage_wait_s=_outage_wait(db) if role == "all" else 0.0))
        factory = runtime.brain_factory()
        if factory is None or runtime.store is None:
            runs, shown_store = api_node_runs(loaded, db, runtime.memory)
        else:
            runs = durable_runs(loaded, runtime.store, factory, db, cap, runtime.conversations)
            shown_store = repr(runtime.store)
            if runs is None:  # runs execute in this process: their first one is no slower
                threading.Thread(target=_warm_up, args=(factory(),), name="dcbrain-warm-up",
                                 daemon=True).start()
    except (ConfigError, ValueError, OSError, DatabaseUnavailable) as exc:
        sock.close()
        _fail(str(exc))
    keep_s, check_s = runtime.retention or (None, DEFAULT_CHECK_EVERY_S)
    settings = ServerSettings(
        api_token=token, max_concurrent_runs=cap,
        allowed_hosts=LOOPBACK_HOSTS if loopback else ("*",),
        list_conversations=list_conversations, output_type=runtime.output_type,
        retention_s=keep_s, retention_check_s=check_s)
    app = create_app(runtime, settings, runs=runs)
    serve_metrics(app, Metrics(), token=token, open_metrics=loaded.telemetry.metrics_open)
    shown = f"[{host}]" if ":" in host else host
    bound_port = sock.getsockname()[1]
    say(f"dcbrain serving on http://{shown}:{bound_port}/ (store: {shown_store})")
    say(durability_notice(runs, db, role))
    # No access log: the event stream may carry ?access_token= in its URL.
    # uvicorn's lines go through the process's log format (log_config=None)
    server = DrainingServer(
        uvicorn_config(app, limits, forwarded_allow_ips=proxies, access_log=False,
                       log_level="info", log_config=None,
                       timeout_graceful_shutdown=SHUTDOWN_GRACE_S),
        app.state.drain, drain_timeout)
    server.run(sockets=[sock])


def _warm_up(brain: DCBrain) -> None:
    """Load what the first run would load lazily, while the server starts serving."""
    try:
        brain.warm_up()
    except Exception as exc:  # the first run meets the same problem and reports it
        say(f"warning: warming the brain up failed: {exc}", level=logging.WARNING)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(2)


def durable_runs(
    config: Config,
    store: RunStore,
    factory: Callable[[], DCBrain],
    db: str | None,
    max_concurrent_runs: int,
    memory: Memory | None = None,
) -> RunService | None:
    """Durable runs executed by ``serve`` itself (``--role all``); ``None`` (runs in this
    process) without the durable extra.

    ``memory`` keeps the conversations (the brains' memory).

    With ``--db`` the extra is required; without it, it is used when installed, on the
    store's SQLite file.
    """
    missing = durable_runs_missing()
    if missing is not None:
        if db is not None:
            raise ValueError(f"--db needs durable runs, but {missing}")
        return None
    from dcbrain.durable.setup import build_engine, open_store
    from dcbrain.server.durable_runs import DurableRuns

    db_url, durable = open_store(db, store, outage_wait_s=_outage_wait(db))
    engine, hub = build_engine(db_url, durable, config, factory,
                               concurrency=max_concurrent_runs)
    return DurableRuns(engine, durable, hub, memory=memory,
                       max_concurrent_runs=max_concurrent_runs)


def api_node_runs(config: Config, db: str | None,
                  memory: Memory | None) -> tuple[RunService, str]:
    """Durable runs for ``--role api`` and the store they name: the workers' database only.

    Nothing waits out a database outage here: a request meets it at once, as a 503.
    """
    if db is None:
        raise ValueError("--role api needs --db postgresql://... (the workers' database)")
    missing = durable_runs_missing()
    if missing is not None:
        raise ValueError(f"--role api needs durable runs, but {missing}")
    from dcbrain.durable.setup import build_engine, open_store
    from dcbrain.server.durable_runs import DurableRuns

    db_url, durable = open_store(db, None)
    engine, hub = build_engine(db_url, durable, config, None)
    return DurableRuns(engine, durable, hub, memory=memory), repr(durable)


def _outage_wait(db: str | None) -> float:
    """How long a process that executes runs on ``db`` waits out a database outage."""
    if db is None or durable_runs_missing() is not None:
        return 0.0
    from dcbrain.durable.setup import OUTAGE_WAIT_S

    return OUTAGE_WAIT_S


def durable_runs_missing() -> str | None:
    """Why durable runs cannot be had in this Python (``None``: they can)."""
    try:
        import dcbrain.durable.setup
        import dcbrain.server.durable_runs  # noqa: F401
    except ImportError as exc:
        return (f"DBOS cannot be imported ({exc}); reinstall dcbrain with its dependencies "
                '(pip install -e ".[local]")')
    return None


def durability_notice(runs: RunService | None, db: str | None, role: str) -> str:
    """What ``serve`` says at start about a crash of this process mid-run."""
    if runs is None:
        return ("runs do not survive a crash: a run in flight is marked interrupted at the "
                f"next start, because {durable_runs_missing() or 'durable runs are off'}")
    if role == "api":
        return ("runs survive a crash: workers execute them from the PostgreSQL queue (--db) "
                "and another worker resumes a run whose worker died")
    where = "the PostgreSQL database (--db)" if db is not None else "SQLite files beside the store"
    return (f"runs survive a crash: each run is a durable workflow in {where}; a restarted "
            "server resumes the runs it was executing")


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``dcbrain`` command line."""
    app.command("serve")(serve)
