"""A run's events as Server-Sent Events: ``id`` is the event's ``seq``, ``data`` its JSON.

Every event is sent as a plain ``message`` (its ``type`` is inside the JSON), so one
``EventSource.onmessage`` handler sees them all. After the last event of a finished run
an ``end`` event carries the run's status; a client should close then, otherwise the
browser reconnects (with ``Last-Event-ID``) and just gets ``end`` again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from dcbrain.server.service import RunService
from dcbrain.values.jsonsafe import dumps

#: How long a browser waits before reconnecting a dropped stream (milliseconds).
RETRY_MS: Final = 2000
#: Seconds between keep-alive comments on an idle stream.
PING_S: Final = 15
#: Event streams one client (by address) may hold open, and all clients together.
DEFAULT_MAX_STREAMS_PER_CLIENT: Final = 100
DEFAULT_MAX_STREAMS: Final = 1000
#: A cursor is -1 or an event seq: digits only, and small enough for SQLite's INTEGER.
_CURSOR = re.compile(r"-1|[0-9]{1,18}")


def parse_last_event_id(header: str | None, query: str | None) -> int | None:
    """The ``seq`` to resume after: the ``Last-Event-ID`` header, else ``?after=``.

    ``-1`` (replay everything) when neither is given; ``None`` when one is not -1 or a
    non-negative integer of at most 18 digits (a seq fits SQLite's 64-bit INTEGER).
    """
    value = header if header not in (None, "") else query
    if value is None or value == "":
        return -1
    if not _CURSOR.fullmatch(value):
        return None
    return int(value)


def _encode(event: dict[str, Any]) -> str:
    return dumps(event, compact=True)


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


class StreamSlots:
    """Counts open event streams per client and in total, to refuse more than the caps."""

    def __init__(self, per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT,
                 total: int = DEFAULT_MAX_STREAMS) -> None:
        if per_client < 1 or total < 1:
            raise ValueError("stream limits must be at least 1")
        self.per_client = per_client
        self.total = total
        self._open: Counter[str] = Counter()

    @property
    def open_count(self) -> int:
        return sum(self._open.values())

    def problem(self, client: str) -> str | None:
        """Why ``client`` may not open another stream now, or ``None``."""
        if self._open[client] >= self.per_client:
            return (f"this client already has {self._open[client]} event streams open (the "
                    "limit); close one (EventSource.close()) before opening another")
        if self.open_count >= self.total:
            return f"the server has {self.total} event streams open (the limit); retry later"
        return None

    def take(self, client: str) -> Callable[[], None]:
        """Count a stream of ``client`` as open; returns what releases it (once)."""
        self._open[client] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._open[client] -= 1
                if self._open[client] <= 0:
                    del self._open[client]

        return release


class _CountedStream(EventSourceResponse):
    """An SSE response that frees its stream slot however it ends."""

    def __init__(
        self, stream: AsyncIterator[ServerSentEvent], release: Callable[[], None]
    ) -> None:
        super().__init__(stream, ping=PING_S)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def event_stream_response(
    runs: RunService, run_id: str, after: int, release: Callable[[], None]
) -> EventSourceResponse:
    """The SSE response replaying events after ``after``, then following the live run;
    ``release`` is called when the stream ends (its slot is free again)."""
    return _CountedStream(_stream(runs, run_id, after), release)
