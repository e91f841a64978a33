"""The HTTP server: runs over a JSON API, their events as Server-Sent Events, a live web page.

``create_app(runtime, ServerSettings(...))``
builds the ASGI app; ``dcbrain serve --config F``
runs it with uvicorn. See ``docs/server.md``.

Each name is imported from its module on first use, so ``dcbrain --help`` does not
load the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.server.app import API_TOKEN_ENV, ApiError, create_app
    from dcbrain.server.runs import (
        BrainFactory,
        RunManager,
        RunnableBrain,
        ServerRun,
        TooManyRuns,
    )
    from dcbrain.server.settings import ServerSettings

__all__ = [
    "API_TOKEN_ENV",
    "ApiError",
    "BrainFactory",
    "RunManager",
    "RunnableBrain",
    "ServerRun",
    "ServerSettings",
    "TooManyRuns",
    "create_app",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "API_TOKEN_ENV": "dcbrain.server.app",
    "ApiError": "dcbrain.server.app",
    "BrainFactory": "dcbrain.server.runs",
    "RunManager": "dcbrain.server.runs",
    "RunnableBrain": "dcbrain.server.runs",
    "ServerRun": "dcbrain.server.runs",
    "ServerSettings": "dcbrain.server.settings",
    "TooManyRuns": "dcbrain.server.runs",
    "create_app": "dcbrain.server.app",
})
