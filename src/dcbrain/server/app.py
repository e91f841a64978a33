"""The HTTP API and the web page, as one Starlette (ASGI) application.

``create_app(runtime, ServerSettings(...))`` is all a deployment or a test needs: the
:class:`~dcbrain.config.runtime.Runtime` holds the brain (one, shared by every run), the store
that keeps runs and their events (a :class:`~dcbrain.memory.RunStore`), the
conversations (by default the store itself when it is also a
:class:`~dcbrain.memory.Memory`, as ``SQLiteMemory`` is) and, for durable runs, the
engine; :class:`ServerSettings` holds the server's knobs.
Every error is a JSON body ``{"error": code, "detail": message}`` with a 4xx status (or
``503`` while the server drains before it stops, see :mod:`dcbrain.server.drain`).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dcbrain.approvals import MAX_REASON_CHARS
from dcbrain.config.runtime import Runtime
from dcbrain.exceptions import ApiError as ApiError
from dcbrain.exceptions import DatabaseUnavailable, TFApprovalError, TooManyRuns
from dcbrain.memory import Memory
from dcbrain.messages import TextMessage
from dcbrain.runs import RunRecord
from dcbrain.runs.retention import RetentionSchedule
from dcbrain.server._responses import JSONResponse
from dcbrain.server.admin import AdminEndpoints
from dcbrain.server.drain import Drain
from dcbrain.server.runs import RunManager
from dcbrain.server.service import RunService
from dcbrain.server.settings import DEFAULT_MAX_BODY_BYTES as DEFAULT_MAX_BODY_BYTES
from dcbrain.server.settings import LOOPBACK_HOSTS as LOOPBACK_HOSTS
from dcbrain.server.settings import ServerSettings
from dcbrain.server.sse import (
    StreamSlots,
    event_stream_response,
    parse_last_event_id,
)

logger = logging.getLogger("dcbrain.server")

API_TOKEN_ENV: Final = "DCBRAIN_API_TOKEN"
#: Paths a load balancer or an orchestrator probes, answered without the token.
PROBE_PATHS: Final = frozenset({"/v1/health", "/v1/ready"})
#: Methods that change nothing: the only ones another site's page may send.
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
#: Seconds a client is told to wait when this node is not ready.
NOT_READY_RETRY_S: Final = 2

#: Conversation ids are chosen by clients: short, printable, no path tricks.
CONVERSATION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
RUN_ID: Final = re.compile(r"[0-9a-f]{32}")
APPROVAL_CALL_ID: Final = re.compile(r"ap-[0-9a-f]{20}")
#: The one path that takes ?access_token= (EventSource cannot send headers).
EVENT_STREAM_PATH: Final = re.compile(r"/v1/runs/[0-9a-f]{32}/events")
#: Seconds a client is told to wait before sending a message again to a draining server.
DRAINING_RETRY_S: Final = 5
#: Runs shown with a conversation (newest first).
MAX_LISTED_RUNS: Final = 100

_CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def error_response(
    status: int, code: str, detail: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


def create_app(runtime: Runtime, settings: ServerSettings | None = None) -> Starlette:
    """The server as an ASGI app, from data: the :class:`~dcbrain.config.runtime.Runtime`
    :func:`~dcbrain.config.runtime.build_runtime` built (or one made by hand) and the server's
    :class:`ServerSettings`.

    Runs execute on the runtime's durable engine when it has one (``runtime.durable``,
    e.g. workers executing from a PostgreSQL queue), else in this process on its brain
    (or its ``brains`` factory), kept in ``runtime.store``. Conversations are read from
    ``runtime.conversations`` (without one, a conversation shows its runs only).

    ``api_token`` (default: the ``DCBRAIN_API_TOKEN`` environment variable) makes every
    ``/v1`` request need ``Authorization: Bearer <token>``. ``max_concurrent_runs`` caps
    conversations with an unfinished run (429 beyond it), ``max_body_bytes`` request
    bodies (413). ``allowed_hosts`` are the ``Host`` names answered (``"*"``: any); the
    loopback default stops DNS-rebinding pages from reaching a local server.
    ``GET /v1/conversations`` answers only with ``list_conversations=True``: by default a
    conversation is reachable only by whoever knows its id. ``supersede_grace_s`` is how long a
    superseded run may take to reach its next safe point before it is aborted.
    ``max_streams_per_client`` and ``max_streams`` cap open event streams per client
    address and in total (429 beyond). ``retention_s`` prunes runs that ended longer ago
    than that, at start and every ``retention_check_s`` (``None``: the runtime's
    ``[retention]``). ``output_type`` is the type answers are validated into (``None``:
    the runtime's, ``[brain] output_type``): ``GET /v1/schema`` shows its JSON Schema.
    """
    if not isinstance(runtime, Runtime):
        raise TypeError("create_app(runtime, ServerSettings(...)) needs a Runtime")
    if settings is None:
        settings = ServerSettings()
    elif not isinstance(settings, ServerSettings):
        raise TypeError("create_app(runtime, settings): settings must be a ServerSettings")
    if settings.max_body_bytes < 1:
        raise ValueError("max_body_bytes must be at least 1")
    token = settings.api_token if settings.api_token is not None \
        else os.environ.get(API_TOKEN_ENV) or None
    output_type = settings.output_type if settings.output_type is not None \
        else runtime.output_type
    periods = runtime.retention if settings.retention_s is None \
        else (settings.retention_s, settings.retention_check_s)
    runs = run_service(runtime, settings)
    streams = StreamSlots(settings.max_streams_per_client, settings.max_streams)
    drain = Drain(runs, streams)
    api = _Api(runs, runtime.conversations, max_body_bytes=settings.max_body_bytes,
               list_conversations=settings.list_conversations, streams=streams, drain=drain)

    admin = AdminEndpoints(runs, api.optional_json_object, _run_id, CONVERSATION_ID)
    retention = None if periods is None else RetentionSchedule(runs.prune, *periods)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        interrupted = await runs.start()
        if interrupted:
            logger.warning("marked %d unfinished run(s) as interrupted", len(interrupted))
        if retention is not None:
            retention.start()
        yield
        if retention is not None:
            retention.stop()
        await runs.stop()

    schema = output_schema(output_type)

    async def get_schema(request: Request) -> Response:
        return JSONResponse(schema)

    routes = [
        Route("/", _index, methods=["GET"]),
        Route("/v1/schema", get_schema, methods=["GET"]),
        Mount("/static", StaticFiles(packages=[("dcbrain.server", "static")]), name="static"),
        Route("/v1/health", api.health, methods=["GET"]),
        Route("/v1/ready", api.ready, methods=["GET"]),
        Route("/v1/conversations", api.list_conversations, methods=["GET"]),
        Route("/v1/conversations/{cid}", api.get_conversation, methods=["GET"]),
        Route("/v1/conversations/{cid}/messages", api.post_message, methods=["POST"]),
        Route("/v1/runs", admin.page_runs, methods=["GET"]),
        Route("/v1/runs/prune", admin.prune_runs, methods=["POST"]),
        Route("/v1/runs/{run_id}", api.get_run, methods=["GET"]),
        Route("/v1/runs/{run_id}/events", api.run_events, methods=["GET"]),
        Route("/v1/runs/{run_id}/abort", api.abort_run, methods=["POST"]),
        Route("/v1/runs/{run_id}/cancel", api.abort_run, methods=["POST"]),
        Route("/v1/runs/{run_id}/resume", admin.resume_run, methods=["POST"]),
        Route("/v1/runs/{run_id}/approvals/{call_id}", api.decide, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: _api_error,
            DatabaseUnavailable: _database_unavailable,
            HTTPException: _http_error,
            Exception: _unexpected_error,
        },
    )
    app.state.runs = runs
    app.state.streams = api.streams
    app.state.drain = drain  # what a DrainingServer drains on SIGTERM
    app.add_middleware(_Guard, token=token, allowed_hosts=tuple(settings.allowed_hosts))
    return app


def run_service(runtime: Runtime, settings: ServerSettings) -> RunService:
    """Where the app's runs execute: the runtime's durable engine, else this process."""
    durable = runtime.durable
    if durable is not None:
        from dcbrain.server.durable_runs import DurableRuns

        sweep = {} if settings.approval_sweep_s is None \
            else {"approval_sweep_s": settings.approval_sweep_s}
        return DurableRuns(durable.engine, durable.store, durable.hub,
                           memory=runtime.conversations,
                           max_concurrent_runs=durable.capacity, **sweep)
    factory = runtime.brain_factory()
    if factory is None or runtime.store is None:
        raise ValueError("create_app needs a runtime with a brain and a store, or durable "
                         "runs that execute elsewhere")
    return RunManager(factory, runtime.store, memory=runtime.conversations,
                      max_concurrent_runs=settings.max_concurrent_runs,
                      supersede_grace_s=settings.supersede_grace_s)


def output_schema(output_type: Any) -> dict[str, Any]:
    """What ``GET /v1/schema`` answers: the answer's type and its JSON Schema (both
    ``null`` when answers are untyped)."""
    if output_type is None:
        return {"output_type": None, "output_schema": None}
    from dcbrain.brain.output import OutputType

    typed = OutputType(output_type)
    return {"output_type": typed.name, "output_schema": json.loads(typed.schema)}


async def _index(request: Request) -> Response:
    path = resources.files("dcbrain.server").joinpath("static", "index.html")
    return FileResponse(str(path), media_type="text/html; charset=utf-8")


class _Api:
    """The ``/v1`` endpoints."""

    def __init__(
        self, runs: RunService, memory: Memory | None, *, max_body_bytes: int,
        list_conversations: bool, streams: StreamSlots, drain: Drain,
    ) -> None:
        self.runs = runs
        self.memory = memory
        self.max_body_bytes = max_body_bytes
        self.allow_listing = list_conversations
        self.streams = streams
        self.drain = drain

    async def health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "active_runs": self.runs.active_count,
                             "max_concurrent_runs": self.runs.max_concurrent_runs,
                             "list_conversations": self.allow_listing,
                             "draining": self.drain.draining})

    async def ready(self, request: Request) -> Response:
        """200 when this node can take runs; 503 saying what it lacks."""
        missing = await self.runs.readiness()
        if self.drain.draining:  # out of the balancer while it finishes its runs
            missing.append("draining: this server is shutting down")
        if not missing:
            return JSONResponse({"ready": True})
        return JSONResponse({"ready": False, "error": "not_ready", "missing": missing},
                            status_code=503,
                            headers={"Retry-After": str(NOT_READY_RETRY_S)})

    async def list_conversations(self, request: Request) -> Response:
        if not self.allow_listing:
            raise ApiError(404, "listing_off", "listing conversations is turned off on this "
                           "server (dcbrain serve --list-conversations turns it on)")
        return JSONResponse({"conversations": await self.runs.conversations()})

    async def get_conversation(self, request: Request) -> Response:
        cid = _conversation_id(request)
        messages = await self.memory.amessages(cid) if self.memory is not None else []
        records = await self.runs.list_runs(cid)
        if not messages and not records:
            raise ApiError(404, "not_found", f"no conversation {cid!r}")
        summaries = []
        for record in records[:MAX_LISTED_RUNS]:
            live = await self.runs.describe(record.run_id)
            summaries.append(live if live is not None else RunRecord.from_stored(record).summary())
        run_ids = {record.run_id for record in records}
        return JSONResponse({
            "conversation_id": cid,
            "messages": [_message_dict(message, run_ids) for message in messages],
            "runs": summaries,
        })

    async def post_message(self, request: Request) -> Response:
        cid = _conversation_id(request)
        body = await self._json_body(request)
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, str) or not content.strip():
            raise ApiError(422, "invalid_message",
                           'the body must be a JSON object {"content": "<non-empty text>"}')
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate such as "\ud800": unstorable
            raise ApiError(422, "invalid_message",
                           f"the content is not valid Unicode text (not encodable as UTF-8: "
                           f"{exc.reason} at position {exc.start})") from None
        if self.drain.draining:
            raise ApiError(503, "draining", "this server is shutting down and takes no new "
                           "runs; send the message again (to another server, or to this one "
                           "once it is back)", headers={"Retry-After": str(DRAINING_RETRY_S)})
        try:
            run = await self.runs.submit(cid, content)
        except TooManyRuns as exc:
            raise ApiError(429, "too_many_runs", str(exc), headers={"Retry-After": "1"}) from None
        return JSONResponse(
            {
                "run_id": run.run_id,
                "conversation_id": cid,
                "supersedes": run.supersedes,
                "run_url": f"/v1/runs/{run.run_id}",
                "events_url": f"/v1/runs/{run.run_id}/events",
            },
            status_code=202,
        )

    async def get_run(self, request: Request) -> Response:
        run_id = _run_id(request)
        summary = await self.runs.describe(run_id)
        if summary is None:
            raise ApiError(404, "not_found", f"no run {run_id!r}")
        return JSONResponse(summary)

    async def run_events(self, request: Request) -> Response:
        run_id = _run_id(request)
        after = parse_last_event_id(
            request.headers.get("last-event-id"), request.query_params.get("after")
        )
        if after is None:
            raise ApiError(400, "invalid_last_event_id",
                           "Last-Event-ID (or ?after=) must be -1 or an event seq (digits only, at "
                           "most 18)")
        if not await self.runs.exists(run_id):
            raise ApiError(404, "not_found", f"no run {run_id!r}")
        client = request.client.host if request.client is not None else ""
        problem = self.streams.problem(client)
        if problem is not None:
            raise ApiError(429, "too_many_streams", problem, headers={"Retry-After": "5"})
        return event_stream_response(self.runs, run_id, after, self.streams.take(client))

    async def abort_run(self, request: Request) -> Response:
        run_id = _run_id(request)
        _require_json_or_token(request)
        if await self.runs.abort_run(run_id):
            return JSONResponse({"run_id": run_id, "aborting": True}, status_code=202)
        summary = await self.runs.describe(run_id)
        if summary is None:
            raise ApiError(404, "not_found", f"no run {run_id!r}")
        raise ApiError(409, "run_finished", f"run {run_id!r} has already ended "
                       f"({summary['status']})")

    async def optional_json_object(self, request: Request) -> dict[str, Any]:
        """A state-changing request's JSON object body; none (or an empty one) is ``{}``."""
        _require_json_or_token(request)
        if _media_type(request) != "application/json" or \
                request.headers.get("content-length") == "0":
            return {}
        body = await self._json_body(request)
        if not isinstance(body, dict):
            raise ApiError(422, "invalid_body", "the body must be a JSON object")
        return body

    async def decide(self, request: Request) -> Response:
        """``{"approved": bool, "reason": str, "args_hash": str}``: a person's decision on
        a call the run waits on; 404 unknown run or call, 409 decided or other arguments."""
        run_id = _run_id(request)
        call_id = request.path_params["call_id"]
        if not APPROVAL_CALL_ID.fullmatch(call_id):
            raise ApiError(404, "not_found", f"no call {call_id!r} waits for a decision")
        body = await self._json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("approved"), bool):
            raise ApiError(400, "invalid_decision",
                           'send {"approved": true} or {"approved": false, "reason": "..."}')
        reason, digest = body.get("reason", ""), body.get("args_hash")
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            raise ApiError(400, "invalid_decision", "reason must be a string of at most "
                           f"{MAX_REASON_CHARS} characters")
        if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
            raise ApiError(400, "invalid_decision", "args_hash must be the request's "
                           "64-character args_hash")
        try:
            decision = await self.runs.decide(run_id, call_id, approved=body["approved"],
                                              reason=reason, args_hash=digest)
        except TFApprovalError as exc:
            code = "not_found" if exc.status == 404 else "approval_conflict"
            raise ApiError(exc.status, code, str(exc)) from None
        return JSONResponse({"run_id": run_id, **decision})

    async def _json_body(self, request: Request) -> Any:
        if _media_type(request) != "application/json":
            raise ApiError(415, "unsupported_media_type", "send the body as application/json")
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            raise _too_large(self.max_body_bytes)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.max_body_bytes:
                raise _too_large(self.max_body_bytes)
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, "invalid_json", f"the body is not valid JSON: {exc}") from None
        except RecursionError:
            raise ApiError(400, "invalid_json",
                           "the body is not JSON this server reads: nested too deeply") from None


def _message_dict(message: TextMessage, run_ids: Collection[str]) -> dict[str, Any]:
    """A stored message as the API shows it.

    The brain tags its answers with its run id, which is the server's run id; ``run_id``
    is left out when no run of the server is known to have produced the answer.
    """
    extra = message.additional_kwargs
    shown: dict[str, Any] = {"role": message.role, "content": message.content,
                             "created_at": message.created_at}
    run_id = extra.get("run_id")
    if isinstance(run_id, str) and run_id in run_ids:
        shown["run_id"] = run_id
    shown.update({key: extra[key] for key in ("status", "reason") if key in extra})
    return shown


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _require_json_or_token(request: Request) -> None:
    """A state-changing request must be one a cross-site page cannot send unnoticed.

    A form or a ``fetch`` without a CORS preflight can only send a few content types and
    no ``Authorization`` header; this server answers no preflight, so either one shows
    the request comes from the page itself or from a client that holds the token.
    """
    if request.headers.get("authorization", "").lower().startswith("bearer "):
        return
    if _media_type(request) != "application/json":
        raise ApiError(415, "unsupported_media_type",
                       "send Content-Type: application/json (an empty body is fine)")


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"the body is larger than {limit} bytes")


def _conversation_id(request: Request) -> str:
    cid = str(request.path_params["cid"])
    if not CONVERSATION_ID.fullmatch(cid):
        raise ApiError(400, "invalid_conversation_id",
                       "a conversation id is 1-128 characters: letters, digits and _ . : @ -, "
                       "starting with a letter or digit")
    return cid


def _run_id(request: Request) -> str:
    run_id = str(request.path_params["run_id"])
    if not RUN_ID.fullmatch(run_id):
        raise ApiError(404, "not_found", f"no run {run_id!r}")
    return run_id


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.detail, exc.headers)


async def _database_unavailable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DatabaseUnavailable)
    logger.warning("%s %s: %s", request.method, request.url.path, exc)
    # what failed where (hosts, sockets, users) goes to the log, not to the client
    return error_response(503, "database_unavailable",
                          "the database is unavailable; retry in a moment",
                          headers={"Retry-After": str(exc.retry_after_s)})


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), exc.headers)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    logger.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "the server failed; see its log")


class _Guard:
    """Host check, bearer-token auth for ``/v1`` and security headers on every response."""

    def __init__(self, app: ASGIApp, *, token: str | None, allowed_hosts: tuple[str, ...]) -> None:
        self.app = app
        self.token = token
        self.any_host = "*" in allowed_hosts
        self.allowed_hosts = frozenset(host.lower() for host in allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1")
                   for key, value in scope["headers"]}
        if not self.any_host and _host_name(headers.get("host", "")) not in self.allowed_hosts:
            await error_response(400, "invalid_host", "this Host is not served")(
                scope, receive, send)
            return
        path: str = scope["path"]
        needs_token = (self.token is not None and path.startswith("/v1/")
                       and path not in PROBE_PATHS)
        if needs_token and not self._authorized(headers, scope):
            response = error_response(
                401, "unauthorized", "send Authorization: Bearer <token>",
                headers={"WWW-Authenticate": 'Bearer realm="dcbrain"'},
            )
            await response(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS:
            problem = cross_origin_problem(headers)
            if problem is not None:
                await error_response(403, "cross_origin", problem)(scope, receive, send)
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", _CONTENT_SECURITY_POLICY.encode()),
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _authorized(self, headers: dict[str, str], scope: Scope) -> bool:
        assert self.token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            # EventSource cannot send headers: the event stream also takes ?access_token=.
            given = ""
            if scope["method"] == "GET" and EVENT_STREAM_PATH.fullmatch(scope["path"]):
                given = _query_value(scope, "access_token")
        return bool(given) and hmac.compare_digest(given.strip().encode(), self.token.encode())


def cross_origin_problem(headers: Mapping[str, str]) -> str | None:
    """Why a state-changing request comes from another site's page (``None``: it does not).

    A browser names the page that sent a request in ``Origin`` (and ``Sec-Fetch-Site``);
    the server's own page is on the origin the request is addressed to (``Host``, or the
    ``X-Forwarded-Host`` a proxy set, which a page cannot set without a preflight this
    server never grants). A request without either header is not from a page's script.
    """
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site and site not in ("same-origin", "none"):
        return (f"a request from another site's page ({site}) may not change anything "
                "here (Sec-Fetch-Site)")
    origin = headers.get("origin")
    if origin is None:
        return None
    refused = f"a request from the origin {origin[:100]!r} may not change anything here"
    try:
        parsed = urlsplit(origin.strip())
        default = 443 if parsed.scheme == "https" else 80
        port = parsed.port or default
    except ValueError:  # "http://[::1", a port out of range
        return refused
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return refused
    served = {_authority(value, default) for value in (
        headers.get("host", ""), headers.get("x-forwarded-host", "").split(",")[0])
        if value.strip()}
    if (parsed.hostname.lower(), port) in served:
        return None
    return (f"a request from the page at {origin[:100]!r} may not change anything here: "
            "only this server's own page may (Origin)")


def _authority(host: str, default_port: int) -> tuple[str, int]:
    """``(name, port)`` of a ``Host`` header (``[::1]:8765``, ``localhost``)."""
    host = host.strip()
    rest = host.rpartition("]")[2] if host.startswith("[") else host
    port = rest.rpartition(":")[2] if rest.count(":") == 1 else ""
    return _host_name(host), int(port) if port.isdigit() else default_port


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8765
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _query_value(scope: Scope, name: str) -> str:
    raw = scope.get("query_string", b"").decode("latin-1")
    values = parse_qs(raw).get(name)
    return values[0] if values else ""
