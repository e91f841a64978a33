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
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from dcbrain.cli._config import ConfigOption, load_config_or_exit
from dcbrain.cli._observe import (
    DEFAULT_DB_WAIT_S,
    DbWaitOption,
    LogFormatOption,
    install_log_format,
    say,
    wait_for_database_or_exit,
)
from dcbrain.server.connections import DEFAULT_DRAIN_TIMEOUT_S, ConnectionLimits

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.config import Config
    from dcbrain.config.runtime import Runtime
    from dcbrain.server.settings import ServerSettings

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
    from dcbrain.server.app import create_app
    from dcbrain.server.drain import SHUTDOWN_GRACE_S, DrainingServer
    from dcbrain.server.metrics import Metrics, serve_metrics
    from dcbrain.server.protocol import uvicorn_config

    loaded = load_config_or_exit(config)
    install_log_format(log_format)
    limits, proxies = _connection_limits(max_connections, head_timeout, body_timeout,
                                         forwarded_allow_ips, drain_timeout)
    settings = _server_settings(host, insecure_no_token, list_conversations,
                                max_concurrent_runs, role)
    try:  # before the (slow) brain is built, and before any URL is announced
        sock = bind(host, port)
    except OSError as exc:
        _fail(_bind_problem(host, port, exc))
    wait_for_database_or_exit(db, db_wait, "API node" if role == "api" else "server")
    runtime = _runtime(loaded, db, role, settings.max_concurrent_runs, sock)
    app = create_app(runtime, settings)
    serve_metrics(app, Metrics(), token=settings.api_token,
                  open_metrics=loaded.telemetry.metrics_open)
    shown = f"[{host}]" if ":" in host else host
    stored = runtime.store if runtime.store is not None or runtime.durable is None \
        else runtime.durable.store  # an API node's: the workers' database
    say(f"dcbrain serving on http://{shown}:{sock.getsockname()[1]}/ (store: {stored!r})")
    say(durability_notice(runtime.durable is not None, db, role))
    # No access log: the event stream may carry ?access_token= in its URL.
    # uvicorn's lines go through the process's log format (log_config=None)
    server = DrainingServer(
        uvicorn_config(app, limits, forwarded_allow_ips=proxies, access_log=False,
                       log_level="info", log_config=None,
                       timeout_graceful_shutdown=SHUTDOWN_GRACE_S),
        app.state.drain, drain_timeout)
    with runtime:
        server.run(sockets=[sock])


def _connection_limits(max_connections: int, head_timeout: float, body_timeout: float,
                       forwarded_allow_ips: str | None,
                       drain_timeout: float) -> tuple[ConnectionLimits, Any]:
    """The connection limits (fitted to the open-file limit) and the trusted proxies."""
    from dcbrain.server.connections import fit_open_file_limit
    from dcbrain.server.protocol import trusted_proxies

    try:
        limits = ConnectionLimits(max_connections=max_connections,
                                  head_timeout_s=head_timeout, body_timeout_s=body_timeout)
        proxies = trusted_proxies(forwarded_allow_ips) or None
    except ValueError as exc:
        _fail(str(exc))
    if not (math.isfinite(drain_timeout) and drain_timeout >= 0):
        _fail(f"--drain-timeout must be a number of seconds >= 0, not {drain_timeout}")
    return fit_open_file_limit(limits), proxies


def _server_settings(host: str, insecure_no_token: bool, list_conversations: bool,
                     max_concurrent_runs: int | None, role: str) -> ServerSettings:
    """The server's settings from the flags; a non-loopback address needs a token."""
    from dcbrain.server.app import API_TOKEN_ENV, LOOPBACK_HOSTS
    from dcbrain.server.runs import DEFAULT_MAX_CONCURRENT_RUNS
    from dcbrain.server.settings import ServerSettings

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
    if role not in ("all", "api"):
        _fail(f"--role must be 'all' or 'api', not {role!r}")
    if role == "api" and max_concurrent_runs is not None:
        _fail("--max-concurrent-runs is not for --role api: each worker's "
              "--concurrency sets how many runs it executes at once")
    return ServerSettings(api_token=token,
                          max_concurrent_runs=max_concurrent_runs or DEFAULT_MAX_CONCURRENT_RUNS,
                          allowed_hosts=LOOPBACK_HOSTS if loopback else ("*",),
                          list_conversations=list_conversations)


def _runtime(config: Config, db: str | None, role: str, cap: int,
             sock: socket.socket) -> Runtime:
    """What ``serve`` runs on: durable runs when they can be had (required with ``--db``
    and for ``--role api``, whose workers run: no brain, no local file, no outage wait)."""
    from dcbrain.config import ConfigError
    from dcbrain.config.runtime import AppSettings, build_runtime, outage_wait
    from dcbrain.exceptions import DatabaseUnavailable

    api = role == "api"
    try:
        if api and db is None:
            raise ValueError("--role api needs --db postgresql://... (the workers' database)")
        runtime = build_runtime(AppSettings(
            config, db=db, brain=not api, outage_wait_s=0.0 if api else outage_wait(db),
            role="serve", durable="on" if api else "auto",
            durable_for="--role api" if api else "--db", concurrency=cap))
    except (ConfigError, ValueError, OSError, DatabaseUnavailable) as exc:
        sock.close()
        _fail(str(exc))
    if runtime.durable is None and runtime.brain is not None:
        # runs execute in this process: their first one is no slower
        threading.Thread(target=_warm_up, args=(runtime.brain,), name="dcbrain-warm-up",
                         daemon=True).start()
    return runtime


def _warm_up(brain: DCBrain) -> None:
    """Load what the first run would load lazily, while the server starts serving."""
    try:
        brain.warm_up()
    except Exception as exc:  # the first run meets the same problem and reports it
        say(f"warning: warming the brain up failed: {exc}", level=logging.WARNING)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(2)


def durability_notice(durable: bool, db: str | None, role: str) -> str:
    """What ``serve`` says at start about a crash of this process mid-run."""
    from dcbrain.config.runtime import durable_runs_missing

    if not durable:
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
