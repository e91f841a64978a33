"""``dcbrain serve``: the HTTP server and web page for the brain a config file describes."""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dcbrain.config import DEFAULT_CONFIG_FILE, Config, ConfigError, build_brain, find_config

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.memory import Memory
    from dcbrain.server.service import RunService

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: Where runs are stored when the config turns the brain's memory off.
FALLBACK_DB = "dcbrain-server.db"


def brain_factory_from_config(config: Config) -> tuple[Memory, Callable[[], DCBrain]]:
    """The store the server uses and a factory of one fresh brain per run.

    LLMs, chains and tools are built once and shared; each run gets its own
    :class:`~dcbrain.brain.DCBrain` (one instance runs one question at a time), all on
    the one store.
    """
    from dcbrain.brain import DCBrain
    from dcbrain.memory import SQLiteMemory

    template = build_brain(config)
    memory = template.memory
    if memory is None:
        memory = SQLiteMemory(config.resolve(FALLBACK_DB))
        commit_conversations = False
    else:
        commit_conversations = True
    store = memory

    def factory() -> DCBrain:
        return DCBrain(
            spec_chains=template.spec_chains,
            default_llm=template.default_llm,
            default_plan_llm=template.default_plan_llm,
            default_validate_llm=template.default_validate_llm,
            tools=template.tools,
            planning_prompt=template.planning_prompt,
            validate_prompt=template.validate_prompt,
            memory=store if commit_conversations else None,
            memory_chunk_size=template.memory_chunk_size,
            max_iterations=template.max_iterations,
            max_tokens=template.max_tokens,
            timeout=template.timeout,
            limits=template.limits,
        )

    return store, factory


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help=f"Config file (default: ./{DEFAULT_CONFIG_FILE} "
                     "if present, else the embedded local model).", show_default=False),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to bind; keep the loopback default "
                                      "unless a proxy or a token protects the server.")]
    = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = DEFAULT_PORT,
    max_concurrent_runs: Annotated[
        int, typer.Option(help="Conversations that may have a run at once (429 beyond).")
    ] = 16,
    list_conversations: Annotated[
        bool, typer.Option("--list-conversations",
                           help="Answer GET /v1/conversations (off: a conversation is only "
                           "reachable through its id).")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option("--db", help="PostgreSQL URL shared with workers (dcbrain[durable]); "
                     "default: durable runs in the SQLite memory file, one process.",
                     show_default=False),
    ] = None,
    role: Annotated[
        str, typer.Option(help="all: serve and execute runs; api: only accept, enqueue and "
                          "stream (workers execute; needs --db).")
    ] = "all",
) -> None:
    """Serve the HTTP API (live events over SSE) and the web page at http://HOST:PORT/."""
    import uvicorn

    from dcbrain.server.app import API_TOKEN_ENV, LOOPBACK_HOSTS, create_app

    try:
        loaded = find_config(config)
        memory, factory = brain_factory_from_config(loaded)
    except (ConfigError, FileNotFoundError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    try:
        runs = durable_runs(loaded, memory, factory, db, role, max_concurrent_runs)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    token = os.environ.get(API_TOKEN_ENV) or None
    loopback = is_loopback(host)
    if not loopback and token is None:
        sys.stderr.write(
            f"warning: serving on {host} without {API_TOKEN_ENV}: anyone who can reach this "
            "address can run the brain and read conversations\n"
        )
    app = create_app(
        factory,
        memory,
        runs=runs,
        api_token=token,
        max_concurrent_runs=max_concurrent_runs,
        allowed_hosts=LOOPBACK_HOSTS if loopback else ("*",),
        list_conversations=list_conversations,
    )
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"dcbrain serving on http://{shown}:{port}/ (store: {memory!r})\n")
    # No access log: the event stream may carry ?access_token= in its URL.
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="info")


def durable_runs(
    config: Config,
    memory: Memory,
    factory: Callable[[], DCBrain],
    db: str | None,
    role: str,
    max_concurrent_runs: int,
) -> RunService | None:
    """Durable runs for ``serve``; ``None`` (runs in this process) without the durable extra.

    With ``--db`` or ``--role api`` the extra is required; without them it is used when
    installed, on the memory's SQLite file.
    """
    if role not in ("all", "api"):
        raise ValueError(f"--role must be 'all' or 'api', not {role!r}")
    if role == "api" and db is None:
        raise ValueError("--role api needs --db postgresql://... (the workers' database)")
    try:
        from dcbrain.durable.setup import build_engine, open_store
        from dcbrain.server.durable_runs import DurableRuns
    except ImportError:
        if db is not None:
            raise ValueError('--db needs the durable extra: pip install "dcbrain[durable]"') \
                from None
        return None
    db_url, store = open_store(db, memory)
    engine, hub = build_engine(db_url, store, config, factory if role == "all" else None,
                               concurrency=max_concurrent_runs)
    return DurableRuns(engine, store, hub, max_concurrent_runs=max_concurrent_runs)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``dcbrain`` command line."""
    app.command("serve")(serve)
