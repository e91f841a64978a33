"""Run the server in a background thread on a free loopback port: for tests and benchmarks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from dcbrain.server.connections import ConnectionLimits
from dcbrain.server.protocol import uvicorn_config


@contextmanager
def serve_in_thread(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0,
                    limits: ConnectionLimits | None = None,
                    forwarded_allow_ips: str | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn until the block ends; yields the base URL.

    ``port=0`` picks a free port; ``limits`` bound the connections and
    ``forwarded_allow_ips`` names trusted proxies as ``dcbrain serve`` does (default: its
    defaults). Leaving the block shuts the server down gracefully (the app's shutdown
    runs, so live runs end ``interrupted``).
    """
    config = uvicorn_config(app, limits or ConnectionLimits(), host=host, port=port,
                            forwarded_allow_ips=forwarded_allow_ips,
                            log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=10)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dcbrain-server", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start; see the log above")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
