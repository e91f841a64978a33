"""``dcbrain mcp``: serve the configured brain as an MCP server with one ``ask`` tool.

Over stdio by default (an MCP client starts ``dcbrain mcp`` itself), or over streamable
HTTP on 127.0.0.1 with ``--http``. The brain is the one ``dcbrain ask`` would build from
the same config. Exit codes: 0 when the client closes the session, 2 for a config or
usage error (before anything is served), 130 on Ctrl-C. Only warnings and errors are logged
on stderr unless ``--verbose`` or ``--log-level`` asks for more.

With ``--shared``, each question is a durable run queued in the store a ``dcbrain serve``
executes (the config's ``[memory]`` SQLite file, or ``--db``'s PostgreSQL, where
``dcbrain worker`` processes execute): a call waiting for approval is seen and decided
there too, over HTTP, on the web page or with the ``decide`` tool.
"""

from __future__ import annotations

import socket
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit

if TYPE_CHECKING:
    from dcbrain.config.runtime import Runtime
    from dcbrain.mcp.server import LogLevel as ServerLogLevel
    from dcbrain.server.durable_runs import DurableRuns

HTTP_HOST = "127.0.0.1"
DEFAULT_MCP_PORT = 8766


class LogLevel(StrEnum):
    """What ``dcbrain mcp`` logs on stderr: warnings only by default, since a client
    that starts it usually shows (or stores) its stderr; INFO logs every request."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"


def mcp(
    config: ConfigOption = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
    ] = False,
    port: Annotated[int, typer.Option("--port", help="Port for --http.")] = DEFAULT_MCP_PORT,
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="Append every event of every run to this JSONL file.",
                     show_default=False),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every request on stderr (--log-level "
                           "INFO).")
    ] = False,
    log_level: Annotated[
        LogLevel | None,
        typer.Option("--log-level", help="What is logged on stderr [default: WARNING].",
                     case_sensitive=False, show_default=False),
    ] = None,
    shared: Annotated[
        bool, typer.Option("--shared", help="Queue each question as a durable run in the "
                           "store `dcbrain serve` executes (the [memory] file, or --db): "
                           "its approvals can be decided there, over HTTP or the page.")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option("--db", help="With --shared: the PostgreSQL URL of the API nodes and "
                     "workers.", show_default=False),
    ] = None,
) -> None:
    """Serve the brain as an MCP server: one `ask` tool with progress notifications."""
    from dcbrain.config.runtime import AppSettings, build_runtime

    loaded = load_config_or_exit(config)
    if db is not None and not shared:
        sys.stderr.write("error: --db is for --shared\n")
        raise typer.Exit(2)
    with config_errors_exit():
        try:  # with --shared the store's other processes run (with --db: no brain here)
            runtime = build_runtime(AppSettings(
                loaded, db=db, trace_path=trace, brain=not shared or db is None,
                keep_runs=False, durable="on" if shared else "off", durable_for="it",
                executes=False))
        except (ValueError, OSError) as exc:
            sys.stderr.write(f"error: --shared: {exc}\n" if shared else f"error: {exc}\n")
            raise typer.Exit(2) from None
    if http:
        problem = _port_problem(port)
        if problem is not None:
            sys.stderr.write(f"error: {problem}\n")
            raise typer.Exit(2)
    from dcbrain.mcp.server import create_server

    chosen = log_level.value if log_level is not None else "INFO" if verbose else "WARNING"
    runs = shared_runs(runtime) if shared else None
    server = create_server(None if runs is not None else runtime.brain,
                           log_level=cast("ServerLogLevel", chosen), runs=runs)
    try:
        with runtime:
            if http:
                sys.stderr.write(f"dcbrain MCP server on http://{HTTP_HOST}:{port}/mcp\n")
                server.run("streamable-http", host=HTTP_HOST, port=port)
            else:
                server.run("stdio")
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def shared_runs(runtime: Runtime) -> DurableRuns:
    """The durable runs of the store other processes execute: this process only queues,
    follows and decides them (as ``dcbrain serve --role api`` does)."""
    from dcbrain.server.durable_runs import DurableRuns

    durable = runtime.durable
    assert durable is not None
    return DurableRuns(durable.engine, durable.store, durable.hub, memory=runtime.conversations)


def _port_problem(port: int) -> str | None:
    """Why ``port`` cannot be served on 127.0.0.1, or None."""
    if not 0 < port < 65536:
        return f"--port {port} is not a TCP port"
    with socket.socket() as probe:
        try:
            probe.bind((HTTP_HOST, port))
        except OSError as exc:
            return f"cannot listen on {HTTP_HOST}:{port}: {exc.strerror or exc}"
    return None
