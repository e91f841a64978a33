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
    from dcbrain.memory import RunStore

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: Where runs are stored when the config turns the brain's memory off.
FALLBACK_DB = "dcbrain-server.db"


def brain_factory_from_config(config: Config) -> tuple[RunStore, Callable[[], DCBrain]]:
    """The store the server uses and a factory of one fresh brain per run.

    LLMs, chains and tools are built once and shared; each run gets its own
    :class:`~dcbrain.brain.DCBrain` (one instance runs one question at a time), all on
    the one store. With the config's memory off, runs go to a run store of their own and
    no conversation is kept.
    """
    from dcbrain.brain import DCBrain
    from dcbrain.memory import RunStore, SQLiteRunStore

    template = build_brain(config)
    memory = template.memory
    store = memory if isinstance(memory, RunStore) else SQLiteRunStore(
        config.resolve(FALLBACK_DB))

    def factory() -> DCBrain:
        return DCBrain(
            spec_chains=template.spec_chains,
            default_llm=template.default_llm,
            default_plan_llm=template.default_plan_llm,
            default_validate_llm=template.default_validate_llm,
            tools=template.tools,
            planning_prompt=template.planning_prompt,
            validate_prompt=template.validate_prompt,
            memory=memory,
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
) -> None:
    """Serve the HTTP API (live events over SSE) and the web page at http://HOST:PORT/."""
    import uvicorn

    from dcbrain.server.app import API_TOKEN_ENV, LOOPBACK_HOSTS, create_app

    try:
        loaded = find_config(config)
        store, factory = brain_factory_from_config(loaded)
    except (ConfigError, FileNotFoundError, OSError) as exc:
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
        store,
        api_token=token,
        max_concurrent_runs=max_concurrent_runs,
        allowed_hosts=LOOPBACK_HOSTS if loopback else ("*",),
        list_conversations=list_conversations,
    )
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"dcbrain serving on http://{shown}:{port}/ (store: {store!r})\n")
    # No access log: the event stream may carry ?access_token= in its URL.
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="info")


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``dcbrain`` command line."""
    app.command("serve")(serve)
