"""The server's JSON responses: always valid JSON (see :mod:`dcbrain.values.jsonsafe`)."""

from __future__ import annotations

from typing import Any

from starlette import responses

from dcbrain.values.jsonsafe import dumps


class JSONResponse(responses.JSONResponse):
    """Starlette's JSON response, written by :func:`dcbrain.values.jsonsafe.dumps`: a run's NaN,
    an int too long for decimal or a lone surrogate never fails the request."""

    def render(self, content: Any) -> bytes:
        return dumps(content, compact=True).encode("utf-8")
