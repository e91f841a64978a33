"""The HTTP server: runs over a JSON API, their events as Server-Sent Events, a live web page.

``create_app(brain_factory, store)`` builds the ASGI app; ``dcbrain serve --config F``
runs it with uvicorn. See ``docs/server.md``.
"""

from dcbrain.server.app import API_TOKEN_ENV, ApiError, create_app
from dcbrain.server.runs import (
    BrainFactory,
    RunManager,
    RunnableBrain,
    ServerRun,
    TooManyRuns,
)

__all__ = [
    "API_TOKEN_ENV",
    "ApiError",
    "BrainFactory",
    "RunManager",
    "RunnableBrain",
    "ServerRun",
    "TooManyRuns",
    "create_app",
]
