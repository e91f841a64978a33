"""A small OpenAI-compatible HTTP server for tests, listening on 127.0.0.1.

Tests script what it answers, in order, and read what it received::

    server.reply("hello", usage=(12, 3))          # a chat completion
    server.reply_json({"summary": "..."})          # JSON content (structured output)
    server.reply_tool_calls(("add", {"a": 1}))     # the model calls a tool
    server.fail(429, retry_after=0.01)             # rate limited, with Retry-After
    server.fail(500)                               # server error
    server.slow(5.0, "late")                       # answers after 5 s (client timeouts)
    server.malformed(b"{not json")                 # a broken body
    server.drop_connection()                       # closes the socket without answering
    ...
    server.requests[0].messages                    # what the client sent

When the queue is empty, ``handler`` (if set) computes the reply; otherwise the server
answers 400 with "no scripted reply", which the client does not retry.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeResponse:
    """One scripted HTTP answer."""

    status: int = 200
    body: bytes | Callable[[RecordedRequest], bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False


@dataclass
class RecordedRequest:
    """One request the server received; ``body`` is the decoded JSON (or the raw text)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages", []))

    @property
    def model(self) -> str | None:
        return self.json.get("model")

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.json.get("response_format")

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.json.get("tools")


Usage = tuple[int, int] | None


class FakeOpenAIServer:
    """A real HTTP server in a background thread speaking the chat-completions API."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, model: str = "fake-model") -> None:
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.handler: Callable[[RecordedRequest], FakeResponse] | None = None
        self._queue: deque[FakeResponse] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _Server((host, port), _make_handler(self))
        self._thread: threading.Thread | None = None

    # lifecycle

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes slow responses
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # scripting

    def enqueue(self, response: FakeResponse) -> None:
        with self._lock:
            self._queue.append(response)

    @property
    def pending(self) -> int:
        """Scripted answers not served yet."""
        with self._lock:
            return len(self._queue)

    def reply(
        self,
        content: str | None = "",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        usage: Usage | bool = True,
        finish_reason: str | None = None,
        model: str | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """A chat completion; ``usage`` is ``(prompt, completion)``, ``True`` (count words) or
        ``False`` (omitted)."""

        def body(request: RecordedRequest) -> bytes:
            completion = self.completion(content, tool_calls, usage, finish_reason, model, request)
            return _dumps(completion)

        self.enqueue(
            FakeResponse(body=body, headers={"Content-Type": "application/json"}, delay_s=delay_s)
        )

    def reply_json(self, value: Any, **kwargs: Any) -> None:
        self.reply(json.dumps(value, ensure_ascii=False), **kwargs)

    def reply_tool_calls(
        self, *calls: tuple[str, dict[str, Any]] | tuple[str, str], **kwargs: Any
    ) -> None:
        """The model calls tools: each call is ``(name, arguments)``; a str is sent verbatim."""
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for name, arguments in calls
        ]
        self.reply(None, tool_calls=tool_calls, finish_reason="tool_calls", **kwargs)

    def fail(
        self,
        status: int,
        message: str = "scripted failure",
        *,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """An error answer in OpenAI's error format, optionally with ``Retry-After`` (seconds)."""
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if retry_after is not None:
            all_headers["Retry-After"] = _seconds(retry_after)
        error = {"error": {"message": message, "type": "fake_error", "code": status}}
        self.enqueue(FakeResponse(status=status, body=_dumps(error), headers=all_headers))

    def slow(self, delay_s: float, content: str = "slow reply") -> None:
        self.reply(content, delay_s=delay_s)

    def malformed(
        self, body: bytes = b"{not json", *, content_type: str = "application/json"
    ) -> None:
        self.enqueue(FakeResponse(body=body, headers={"Content-Type": content_type}))

    def drop_connection(self) -> None:
        self.enqueue(FakeResponse(drop=True))

    def completion(
        self,
        content: str | None,
        tool_calls: list[dict[str, Any]] | None = None,
        usage: Usage | bool = True,
        finish_reason: str | None = None,
        model: str | None = None,
        request: RecordedRequest | None = None,
    ) -> dict[str, Any]:
        """The JSON body of a chat completion (default usage: words of ``request`` and reply)."""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        body: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": model or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
        }
        if usage is not False:
            if usage is True or usage is None:
                prompt = _words(request.messages) if request is not None else 0
                completion = len((content or "").split())
            else:
                prompt, completion = usage
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return body

    # serving

    def _next_response(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            self.requests.append(request)
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        if request.path.rstrip("/").endswith("/models") and request.method == "GET":
            models = {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            return FakeResponse(body=_dumps(models), headers={"Content-Type": "application/json"})
        if self.handler is not None:
            return self.handler(request)
        error = {"error": {"message": "fake server: no scripted reply", "type": "fake_error"}}
        return FakeResponse(
            status=400, body=_dumps(error), headers={"Content-Type": "application/json"}
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._serve(self.rfile.read(length))

        def _serve(self, raw: bytes) -> None:
            text = raw.decode("utf-8", errors="replace")
            try:
                body: Any = json.loads(text) if text else None
            except ValueError:
                body = text
            request = RecordedRequest(
                method=self.command,
                path=self.path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
            )
            response = server._next_response(request)
            if response.delay_s and server._stopping.wait(response.delay_s):
                return
            if response.drop:
                self.close_connection = True
                return
            payload = response.body(request) if callable(response.body) else response.body
            try:
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout, cancel)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


def _words(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(message.get("content") or "").split()) for message in messages)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
