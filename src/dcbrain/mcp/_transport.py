"""Transports to MCP servers that bound what a server can make this process read.

A server is untrusted: every message it sends is refused past ``max_message_bytes``
*before* it is decoded or parsed, and a refused message fails the request it answers.
Over stdio the server's lines are read as bytes, in linear time; a line that passes the
limit fails its request at once (the request its opening ``"id"`` names, else every
request in flight, gets a JSON-RPC error saying so) and is skipped to its end, and the
session goes on. Over
streamable HTTP a JSON body over the limit fails its request the same way; an SSE event
is bounded by the SDK's own per-event limit, set to the same value. Compressed bodies are
refused, since their size says nothing about what they inflate to. The server's stderr is
kept only for its last lines.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from dcbrain.mcp.limits import size_text

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

logger = logging.getLogger(__name__)

#: Seconds a stdio server has to exit after its stdin closes, then after SIGTERM.
_EXIT_GRACE_S = 2.0
#: How much of a refused line is kept to tell which request it answers.
_OPENING_BYTES = 256
#: A refused line answers the request whose id opens it (``{"jsonrpc": "2.0", "id": 7, …``).
_OPENING_ID = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def connection_failure(error: BaseException) -> Literal["lost", "timeout"] | None:
    """How a call failed if the connection did, not the server's answer: ``"lost"`` (the
    session ended: closed, cut, refused) or ``"timeout"``; a new try may pass."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return {types.CONNECTION_CLOSED: "lost", types.REQUEST_TIMEOUT: "timeout"}.get(
            error.error.code)  # type: ignore[return-value]
    if isinstance(error, TimeoutError | httpx2.TimeoutException):
        return "timeout"
    if isinstance(error, ConnectionError | httpx2.TransportError | anyio.ClosedResourceError
                  | anyio.BrokenResourceError | anyio.EndOfStream):
        return "lost"
    return None


def too_large(limit: int) -> str:
    return f"the server sent a message of more than {size_text(limit)} (max_message_bytes)"


@dataclass
class Received:
    """Bytes a session has received, all messages together (the tool list's limit)."""

    count: int = 0


@dataclass
class StderrTail:
    """The last ``keep`` bytes a stdio server wrote to stderr."""

    keep: int = 16 * 1024
    data: bytearray = field(default_factory=bytearray)

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        del self.data[:-self.keep]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


# -- stdio ------------------------------------------------------------------------------
@dataclass
class _Refused:
    """A line over the limit: only its opening is kept."""

    opening: bytes


class _Lines:
    """Splits a byte stream into lines of at most ``limit`` bytes, in linear time.

    A longer line is reported as :class:`_Refused` as soon as it passes the limit (its
    request fails then, not when the line ends, if ever) and the rest of it is skipped.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._opening = b""
        self._refusing = False

    def feed(self, chunk: bytes) -> Iterator[bytes | _Refused]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if self._take(chunk[start:] if end < 0 else chunk[start:end]):
                yield _Refused(self._opening)
            if end < 0:
                return
            if not self._refusing:
                yield b"".join(self._parts)
            self._parts, self._size, self._opening, self._refusing = [], 0, b"", False
            start = end + 1

    def _take(self, piece: bytes) -> bool:
        """Add ``piece`` to the current line; whether it just passed the limit."""
        if len(self._opening) < _OPENING_BYTES:
            self._opening += piece[:_OPENING_BYTES - len(self._opening)]
        if self._refusing:
            return False
        self._size += len(piece)
        if self._size <= self.limit:
            self._parts.append(piece)
            return False
        self._parts, self._refusing = [], True
        return True


class _StdioSession:
    """The pipes of one stdio server and the requests in flight on them."""

    def __init__(self, process: Process, limit: int, received: Received,
                 stderr: StderrTail) -> None:
        self.process = process
        self.limit = limit
        self.received = received
        self.stderr = stderr
        self.in_flight: set[types.RequestId] = set()
        self.stderr_read = anyio.Event()
        self.to_session, self.read_stream = \
            anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream, self.from_session = \
            anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        lines = _Lines(self.limit)
        try:
            async with self.to_session:
                async for chunk in self.process.stdout:
                    self.received.count += len(chunk)
                    for line in lines.feed(chunk):
                        for item in self._items(line):
                            await self.to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the session or the pipe is gone; the session sees the stream end

    def _items(self, line: bytes | _Refused) -> list[SessionMessage | Exception]:
        if isinstance(line, _Refused):
            return [SessionMessage(error) for error in self._refusals(line.opening)]
        if not line.strip():
            return []
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            return [exc]  # as the SDK's transport does: the session logs it
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.in_flight.discard(message.id)
        return [SessionMessage(message)]

    def _refusals(self, opening: bytes) -> list[types.JSONRPCError]:
        """Errors for the requests a refused line may answer."""
        answered = _opening_id(opening)
        targets = [answered] if answered in self.in_flight else sorted(self.in_flight, key=str)
        if not targets:
            logger.warning("MCP server sent a message over %s that answers no request; "
                           "dropped", size_text(self.limit))
        self.in_flight.difference_update(targets)
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=too_large(self.limit))
        return [types.JSONRPCError(jsonrpc="2.0", id=target, error=error) for target in targets]

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            async for chunk in self.process.stderr:
                self.stderr.add(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the pipe is gone: what it said so far is kept
        finally:
            self.stderr_read.set()

    async def write_stdin(self) -> None:
        assert self.process.stdin is not None
        try:
            async with self.from_session:
                async for session_message in self.from_session:
                    message = session_message.message
                    if isinstance(message, types.JSONRPCRequest):
                        self.in_flight.add(message.id)
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self.process.stdin.send(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.to_session.aclose()  # the session sees the end, not a hung request

    async def stop(self) -> None:
        """Close stdin, give the server a moment to exit, then end its process group."""
        self.read_stream.close()
        self.write_stream.close()
        assert self.process.stdin is not None
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.process.stdin.aclose()
        with anyio.move_on_after(_EXIT_GRACE_S):
            await self.process.wait()
        if self.process.returncode is None:
            await terminate_posix_process_tree(self.process, _EXIT_GRACE_S)
            with anyio.move_on_after(_EXIT_GRACE_S):
                await self.process.wait()
        with anyio.move_on_after(_EXIT_GRACE_S):  # start-up errors quote its last words
            await self.stderr_read.wait()


@asynccontextmanager
async def stdio_transport(
    command: list[str], *, env: dict[str, str], cwd: str | None, max_message_bytes: int,
    received: Received, stderr: StderrTail,
) -> AsyncIterator[TransportStreams]:
    """Start ``command`` as an MCP server and talk to it over its stdin/stdout."""
    process = await anyio.open_process(
        command, env=get_default_environment() | env, cwd=cwd, stderr=subprocess.PIPE,
        start_new_session=True)  # its own group: ending it ends what it started
    session = _StdioSession(process, max_message_bytes, received, stderr)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(session.read_stdout)
        tasks.start_soon(session.read_stderr)
        tasks.start_soon(session.write_stdin)
        try:
            yield session.read_stream, session.write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await session.stop()
            tasks.cancel_scope.cancel()


def _opening_id(opening: bytes) -> types.RequestId | None:
    match = _OPENING_ID.match(opening)
    if match is None:
        return None
    value = json.loads(match.group(1))
    return value if isinstance(value, int | str) else None


# -- streamable HTTP --------------------------------------------------------------------
class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int | None, refusal: str | None,
                 received: Received) -> None:
        self._inner = inner
        self._limit = limit
        self._refusal = refusal
        self._received = received

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # a stream error is what the SDK turns into an error answer to the request
        if self._refusal is not None:
            raise httpx2.StreamError(self._refusal)
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            self._received.count += len(chunk)
            if self._limit is not None and size > self._limit:
                raise httpx2.StreamError(too_large(self._limit))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedHTTP(httpx2.AsyncBaseTransport):
    """Asks for uncompressed bodies and bounds each JSON body (SSE: the SDK, per event)."""

    def __init__(self, limit: int, received: Received) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._limit = limit
        self._received = received

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        refusal = None if encoding in ("", "identity") else (
            f"the server sent a compressed body (Content-Encoding: {encoding}) although "
            "asked for identity; compressed bodies are refused")
        event_stream = response.headers.get("content-type", "").lower().startswith(
            "text/event-stream")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _BoundedBody(response.stream, None if event_stream else self._limit,
                                       refusal, self._received)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def http_transport(url: str, *, max_message_bytes: int,
                         received: Received) -> AsyncIterator[TransportStreams]:
    """Talk to the streamable HTTP MCP server at ``url``."""
    # the SDK's own timeouts: 30 s, and 5 min to read (a response may stream for long)
    client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0),
                                transport=_BoundedHTTP(max_message_bytes, received))
    async with client, streamable_http_client(
            url, http_client=client, max_sse_event_size=max_message_bytes) as streams:
        yield streams
