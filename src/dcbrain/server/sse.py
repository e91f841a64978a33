"""A run's events as Server-Sent Events: ``id`` is the event's ``seq``, ``data`` its JSON.

Every event is sent as a plain ``message`` (its ``type`` is inside the JSON), so one
``EventSource.onmessage`` handler sees them all. After the last event of a finished run
an ``end`` event carries the run's status; a client should close then, otherwise the
browser reconnects (with ``Last-Event-ID``) and just gets ``end`` again.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

from sse_starlette import EventSourceResponse, ServerSentEvent

from dcbrain.server.service import RunService

#: How long a browser waits before reconnecting a dropped stream (milliseconds).
RETRY_MS: Final = 2000
#: Seconds between keep-alive comments on an idle stream.
PING_S: Final = 15


def parse_last_event_id(header: str | None, query: str | None) -> int | None:
    """The ``seq`` to resume after: the ``Last-Event-ID`` header, else ``?after=``.

    ``-1`` (replay everything) when neither is given; ``None`` when one is not an integer.
    """
    value = header if header not in (None, "") else query
    if value in (None, ""):
        return -1
    try:
        seq = int(str(value))
    except ValueError:
        return None
    return seq if seq >= -1 else None


def _encode(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)


async def _stream(
    runs: RunService, run_id: str, after: int
) -> AsyncIterator[ServerSentEvent]:
    last: dict[str, Any] | None = None
    first = True
    async for event in runs.events(run_id, after):
        last = event
        yield ServerSentEvent(_encode(event), id=str(event.get("seq")),
                              retry=RETRY_MS if first else None)
        first = False
    summary = await runs.describe(run_id)
    status = summary["status"] if summary else (last or {}).get("status")
    yield ServerSentEvent(_encode({"run_id": run_id, "status": status}), event="end",
                          retry=RETRY_MS if first else None)


def event_stream_response(runs: RunService, run_id: str, after: int) -> EventSourceResponse:
    """The SSE response replaying events after ``after``, then following the live run."""
    return EventSourceResponse(_stream(runs, run_id, after), ping=PING_S)
