"""Tools of an MCP server (Model Context Protocol), through the official ``mcp`` SDK.

``MCPTools(command=[...])`` starts a server as a subprocess and talks to it over stdio;
``MCPTools(url="http://…/mcp")`` connects over streamable HTTP. It is a sequence of
:class:`~dcbrain.tools.Tool`, so it goes wherever tools go (``tools=MCPTools(...)`` or
``tools=[*mcp_tools, my_function]``). The session lives on an event loop of its own in a
background thread: tools work from any thread or loop (plans call them from theirs),
and the sync API works without an event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import fnmatch
import shlex
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, overload

from dcbrain.exceptions import TFMCPError, TFMCPTransportError, TFSchemaError, TFToolError
from dcbrain.mcp._convert import identifier, plain_result, wrapped_output
from dcbrain.mcp._trust import PolicyRules, TrustRules
from dcbrain.mcp.limits import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_PAGES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOLS,
    MAX_TOOL_DESCRIPTION_CHARS,
    MAX_TOOL_NAME_CHARS,
    size_text,
)
from dcbrain.retries import Backoff, RetryPolicy
from dcbrain.schemas import CompiledSchema, compile_schema, describe_schema_error
from dcbrain.tools import SchemaTool, Tool, checked_timeout

if TYPE_CHECKING:
    from mcp.types import CallToolResult
    from mcp.types import Tool as MCPToolInfo

    from dcbrain.mcp._transport import Received, StderrTail
    from mcp import Client


class MCPTools(Sequence[Tool]):
    """The tools of one MCP server, as dcbrain :class:`~dcbrain.tools.Tool` objects.

    Give ``command`` (a list, or a shell-like string) to start a stdio server, with
    ``env`` added to the SDK's safe default environment and ``cwd``; or ``url`` for a
    streamable HTTP server. ``name`` names the server in errors (default: the command's
    program or the URL's host). Tool names become identifiers (``-``/``.`` → ``_``)
    after ``prefix``. The server is started on first use (iterating, ``len``, indexing,
    :meth:`connect`, ``with``/``async with``) and stopped by :meth:`close` (or at exit).
    Start-up fails after ``startup_timeout`` seconds; each call after ``call_timeout``.
    ``timeout_s`` (every tool) and ``tool_timeout_s`` (by the server's tool name) are the
    tools' own limits as for :class:`~dcbrain.tools.Tool`: a call past it fails with
    :class:`~dcbrain.tfplan.TFToolTimeout`, a failure the planner sees at the call.
    ``require_approval`` lists patterns (``fnmatch``: ``["delete_*", "send_email"]``) of
    the server's tool names whose calls wait for a person's decision
    (``Tool(requires_approval=True)``).

    The injection defence's declarations (see docs/security.md) take patterns of the
    server's tool names too: ``read_only`` the tools with no side effects
    (``Tool(side_effects=False)``; ``True``: all; unset: none, whatever the server's
    ``readOnlyHint`` says),
    ``trusted_output`` the tools whose results are trusted data (``True``: all; never
    from the server's say-so), ``trusted_fields`` a pattern → the fields of the records a
    tool returns that are trusted data (``{"list_*": ["id"]}``: ids the server assigns),
    ``trusted_args`` a pattern → the argument names that may
    carry trusted data only (``{"send_*": ["recipient"]}``), and ``policies`` a list of
    policy functions for every tool or a pattern → such a list. A pattern that matches
    none of the listed tools, or an argument its tool does not have, fails the start-up.

    A call whose connection fails (lost, cut, refused, timed out) raises
    :class:`~dcbrain.exceptions.TFMCPTransportError`, a transient error: by default it is
    tried ``retries=2`` more times (``retry_on`` and ``backoff`` as for
    :class:`~dcbrain.tools.Tool`), and a session the failure took down is started again
    before the next call. A server's own error (``isError``) is not retried. Set
    ``retries=0`` for a server whose calls must not be repeated: a call cut off after the
    server acted on it is made again.

    The server is untrusted. A message of more than ``max_message_bytes`` is refused
    before it is parsed and fails the call it answers; the tool list may take at most
    ``max_list_pages`` pages, ``max_tools`` tools and ``max_list_bytes`` bytes.
    """

    def __init__(
        self,
        *,
        command: str | Sequence[str] | None = None,
        url: str | None = None,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        prefix: str = "",
        startup_timeout: float = 30.0,
        call_timeout: float | None = 300.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_tools: int = DEFAULT_MAX_TOOLS,
        max_list_pages: int = DEFAULT_MAX_LIST_PAGES,
        max_list_bytes: int = DEFAULT_MAX_LIST_BYTES,
        timeout_s: float | None = None,
        tool_timeout_s: Mapping[str, float] | None = None,
        retries: int = 2,
        retry_on: Iterable[type[BaseException]] | None = None,
        backoff: Backoff | float | None = None,
        require_approval: Iterable[str] = (),
        read_only: bool | Iterable[str] | None = None,
        trusted_output: bool | Iterable[str] = False,
        trusted_args: Mapping[str, Iterable[str]] | None = None,
        policies: PolicyRules = (),
        trusted_fields: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("MCPTools needs exactly one of command=[...] (stdio) or url=...")
        argv = shlex.split(command) if isinstance(command, str) else list(command or [])
        if command is not None and not argv:
            raise ValueError("MCPTools: command is empty")
        self.command = argv
        self.url = url
        self.name = name or _default_name(argv, url)
        self.env = dict(env or {})
        self.cwd = str(cwd) if cwd is not None else None
        self.prefix = prefix
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        limits = {"max_message_bytes": max_message_bytes, "max_tools": max_tools,
                  "max_list_pages": max_list_pages, "max_list_bytes": max_list_bytes}
        for setting, value in limits.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MCPTools: {setting} must be a positive integer, got {value!r}")
        self.max_message_bytes = max_message_bytes
        self.max_tools = max_tools
        self.max_list_pages = max_list_pages
        self.max_list_bytes = max_list_bytes
        self.timeout_s = checked_timeout(timeout_s, f"MCP server {self.name!r}")
        self.tool_timeout_s = {
            tool: checked_timeout(value, f"MCP server {self.name!r} tool {tool!r}")
            for tool, value in (tool_timeout_s or {}).items()}
        self.retry = RetryPolicy.of(retries, retry_on, backoff)
        if isinstance(require_approval, str):
            raise TypeError(f"MCPTools {self.name!r}: require_approval is a list of tool-name "
                            f"patterns, got the string {require_approval!r}")
        self.require_approval = tuple(require_approval)
        self._trust = TrustRules.of(self.name, read_only=read_only,
                                   trusted_output=trusted_output, trusted_args=trusted_args,
                                   policies=policies, trusted_fields=trusted_fields)
        self._tools: list[Tool] | None = None
        self._result_schemas: dict[str, CompiledSchema] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._lost: Client | None = None  # a session a call saw end
        self._stop: asyncio.Event | None = None
        self._finished: Future[None] | None = None
        self._stderr: StderrTail | None = None

    def __repr__(self) -> str:
        where = shlex.join(self.command) if self.command else self.url
        return f"MCPTools({self.name!r}, {where!r})"

    # -- the sequence of tools ----------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        """The server's tools (connecting first if needed)."""
        if self._tools is None:
            self.connect()
        assert self._tools is not None
        return self._tools

    def __len__(self) -> int:
        return len(self.tools)

    @overload
    def __getitem__(self, index: int) -> Tool: ...
    @overload
    def __getitem__(self, index: slice) -> list[Tool]: ...
    def __getitem__(self, index: int | slice) -> Tool | list[Tool]:
        return self.tools[index]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    # -- lifetime ------------------------------------------------------------------------
    def connect(self) -> MCPTools:
        """Start (or reach) the server and list its tools; :class:`TFMCPError` on failure."""
        with self._lock:
            if self._tools is not None:
                return self
            listing = self._open_session(TFMCPError)
            try:
                self._tools = self._plan_tools(listing)
            except TFMCPError as exc:
                self._shutdown()
                raise TFMCPError(self._failure(str(exc))) from None
            self._use_compiled_output_schemas()
            atexit.register(self.close)
            return self

    def close(self) -> None:
        """Stop the session (and the server process, for stdio). Safe to call twice."""
        with self._lock:
            self._shutdown()
            self._tools = None
        atexit.unregister(self.close)

    async def aconnect(self) -> MCPTools:
        """:meth:`connect` without blocking the running event loop."""
        return await asyncio.to_thread(self.connect)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> MCPTools:
        return self.connect()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> MCPTools:
        return await self.aconnect()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()

    # -- internals -----------------------------------------------------------------------
    def _open_session(self, failure: type[TFMCPError]) -> list[MCPToolInfo]:
        """Start a session (and its loop) and list the server's tools; ``failure`` when it
        does not start."""
        loop = self._start_loop()
        self._stop = asyncio.Event()
        ready: Future[list[MCPToolInfo]] = Future()
        self._finished = asyncio.run_coroutine_threadsafe(self._serve(ready), loop)
        try:
            return ready.result(timeout=self.startup_timeout)
        except FutureTimeout:
            message = self._failure(f"no answer within {self.startup_timeout:g} s")
            self._shutdown()
            raise failure(message) from None
        except BaseException as exc:
            message = self._failure(_describe(exc))
            self._shutdown()
            raise failure(message) from None

    def _reopen(self) -> None:
        """A new session in place of one the connection took down (the server's process
        exited, an HTTP request was cut): the tools stay as they were listed."""
        with self._lock:
            if self._tools is None or not self._session_lost():
                return  # closed on purpose, or another call reopened it
            self._shutdown()
            self._open_session(TFMCPTransportError)
            self._use_compiled_output_schemas()

    def _session_lost(self) -> bool:
        return self._client is None or self._client is self._lost

    def _start_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"dcbrain-mcp-{self.name}",
                                  daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        return loop

    async def _serve(self, ready: Future[list[MCPToolInfo]]) -> None:
        """Hold the session open until :meth:`close`: the SDK's contexts need one task."""
        stop = self._stop
        assert stop is not None
        try:
            from dcbrain.mcp._transport import (
                Received,
                StderrTail,
                http_transport,
                stdio_transport,
            )
            from mcp import Client

            received = Received()
            async with AsyncExitStack() as stack:
                if self.command:
                    # kept after this task ends: start-up errors quote it
                    self._stderr = StderrTail()
                    transport = stdio_transport(
                        self.command, env=self.env, cwd=self.cwd, received=received,
                        max_message_bytes=self.max_message_bytes, stderr=self._stderr)
                else:
                    transport = http_transport(str(self.url), received=received,
                                               max_message_bytes=self.max_message_bytes)
                self._client = await stack.enter_async_context(Client(transport))
                listing = await self._list_tools(self._client, received)
                ready.set_result(listing)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError | GeneratorExit):
                raise
        finally:
            self._client = None

    async def _list_tools(self, client: Client, received: Received) -> list[MCPToolInfo]:
        """Every page of ``tools/list``, within the listing's limits."""
        tools: list[MCPToolInfo] = []
        cursor: str | None = None
        start = received.count
        for _ in range(self.max_list_pages):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            if len(tools) > self.max_tools:
                raise TFMCPError(f"it lists more than {self.max_tools} tools (max_tools)")
            if received.count - start > self.max_list_bytes:
                raise TFMCPError(f"its tool list is more than {size_text(self.max_list_bytes)} "
                                 "(max_list_bytes)")
            cursor = page.next_cursor
            if not cursor:
                return tools
        raise TFMCPError(f"its tool list goes on for more than {self.max_list_pages} pages "
                         "(max_list_pages)")

    def _shutdown(self) -> None:
        loop, thread, finished = self._loop, self._thread, self._finished
        if loop is None or thread is None:
            return
        stop = self._stop
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        if finished is not None:
            try:
                finished.result(timeout=10)
            except BaseException:
                finished.cancel()  # the session is gone either way
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = self._finished = self._stop = None

    def _plan_tools(self, listing: list[MCPToolInfo]) -> list[Tool]:
        """The listed tools as dcbrain tools; two that become one name are refused."""
        tools: dict[str, Tool] = {}
        listed: dict[str, str] = {}
        unknown = sorted(set(self.tool_timeout_s) - {info.name for info in listing})
        if unknown:
            raise TFMCPError(f"tool_timeout_s names {', '.join(map(repr, unknown))}, which "
                             "it does not list")
        bad = next((info.name for info in listing
                    if not info.name or len(info.name) > MAX_TOOL_NAME_CHARS), None)
        if bad is not None:
            which = "an empty name" if not bad else (
                f"a name longer than {MAX_TOOL_NAME_CHARS} characters ({bad[:40]!r}…)")
            raise TFMCPError(f"it lists a tool with {which}: a tool name is 1 to "
                             f"{MAX_TOOL_NAME_CHARS} characters")
        self._trust.check(listing, self.require_approval)
        for info in listing:
            tool = self._tool(info)
            if tool.name in tools:
                raise TFMCPError(f"tools {listed[tool.name]!r} and {info.name!r} are both "
                                 f"named {tool.name!r} in plans")
            tools[tool.name], listed[tool.name] = tool, info.name
        return list(tools.values())

    def _tool(self, info: MCPToolInfo) -> Tool:
        server_name = info.name
        inner = wrapped_output(info.output_schema)
        trust = self._trust.of_tool(info)

        async def call(**arguments: Any) -> Any:
            return await self._call(server_name, arguments, wrapped=inner is not None)

        try:
            tool = SchemaTool(
                call,
                name=identifier(self.prefix + server_name),
                description=_described(info.description or info.title or ""),
                parameters_schema=info.input_schema,
                returns_schema=inner if inner is not None else info.output_schema,
                closed=True,  # unknown keywords fail before the plan runs, not silently later
                schema_origin=f"tool {server_name!r} input schema",
                timeout_s=self.tool_timeout_s.get(server_name, self.timeout_s),
                side_effects=trust.side_effects,
                trusted_output=trust.trusted_output,
                trusted_fields=trust.trusted_fields,
                trusted_args=trust.trusted_args,
                policies=trust.policies,
            )
            if info.output_schema is not None:
                self._result_schemas[server_name] = compile_schema(
                    info.output_schema, f"tool {server_name!r} output schema")
        except TFSchemaError as exc:
            raise TFMCPError(str(exc)) from None
        tool.origin = f"MCP server {self.name!r}"
        tool.options = tool.options.merged(  # the server's options, as one rule merges them
            f"tool {tool.name!r}", retry=self.retry,
            requires_approval=any(fnmatch.fnmatchcase(server_name, pattern)
                                  for pattern in self.require_approval))
        # readers of plain functions (the embedded planner's prompt) see the real arguments
        call.__signature__ = tool.signature  # type: ignore[attr-defined]
        call.__doc__ = tool.description
        return tool

    def _use_compiled_output_schemas(self) -> None:
        """Have the SDK check structured results with the compiled output schemas: its own
        check matches their patterns with Python's backtracking engine."""
        assert self._client is not None
        self._client.session.validate_tool_result = (  # type: ignore[method-assign]
            self._validate_result)

    async def _validate_result(self, name: str, result: CallToolResult) -> None:
        """What the SDK checks of tool ``name``'s result: its structured content matches
        the tool's output schema."""
        schema = self._result_schemas.get(name)
        if schema is None:
            return
        if result.structured_content is None:
            raise TFToolError("it has an output schema but returned no structured content")
        try:
            errors = schema.errors(result.structured_content)
        except TFSchemaError as exc:
            raise TFToolError(str(exc)) from None
        if errors:
            raise TFToolError("its structured content does not match its output schema: "
                              + "; ".join(describe_schema_error(error) for error in errors[:5]))

    async def _call(self, tool: str, arguments: dict[str, Any], *, wrapped: bool) -> Any:
        """Run ``tools/call`` on the session's loop, from whichever loop calls."""
        if self._tools is not None and self._session_lost():
            await asyncio.to_thread(self._reopen)
        loop, client = self._loop, self._client
        if loop is None or client is None:
            raise TFMCPError(f"MCP server {self.name!r} is closed")
        timeout = self.call_timeout
        future = asyncio.run_coroutine_threadsafe(
            client.call_tool(tool, arguments, read_timeout_seconds=timeout), loop)
        try:
            result = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            from dcbrain.mcp._transport import connection_failure

            failure = connection_failure(exc)
            if failure == "lost":
                self._lost = client  # ending: the next call starts a new session
            error = TFMCPError if failure is None else TFMCPTransportError
            raise error(f"MCP server {self.name!r}: tool {tool!r} failed: "
                        f"{_describe(exc)}") from None
        if result.is_error:
            raise TFToolError(f"MCP tool {tool!r} of server {self.name!r}: "
                              f"{_error_text(result)}")
        return plain_result(result, wrapped)

    def _failure(self, reason: str) -> str:
        where = shlex.join(self.command) if self.command else str(self.url)
        message = f"MCP server {self.name!r} ({where}) did not start: {reason}"
        tail = self._stderr_tail()
        return f"{message}\n{tail}" if tail else message

    def _stderr_tail(self, lines: int = 8) -> str:
        text = self._stderr.text() if self._stderr is not None else ""
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        return "its stderr ends with:\n" + "\n".join(f"  {line}" for line in kept) if kept else ""


def _default_name(argv: list[str], url: str | None) -> str:
    if argv:
        return Path(argv[-1] if len(argv) > 1 else argv[0]).stem or argv[0]
    from urllib.parse import urlsplit

    return urlsplit(url or "").hostname or "mcp"


def _describe(exc: BaseException) -> str:
    """The innermost message of an error (the SDK's task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, TFToolError) else text


def _error_text(result: Any) -> str:
    texts = [getattr(block, "text", "") for block in result.content]
    return " ".join(text for text in texts if text).strip() or "the tool reported an error"


def _described(text: str) -> str:
    """A server's description of a tool, cut to :data:`MAX_TOOL_DESCRIPTION_CHARS`."""
    if len(text) <= MAX_TOOL_DESCRIPTION_CHARS:
        return text
    return text[:MAX_TOOL_DESCRIPTION_CHARS] + "… (cut)"


__all__ = ["MCPTools", "TFMCPError", "TFMCPTransportError"]
