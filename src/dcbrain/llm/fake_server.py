"""An OpenAI-compatible chat-completions server that answers from a script, for testing.

Point ``[llm.NAME] base_url`` (or ``OpenAILLM(base_url=...)``) at it and ``dcbrain ask``,
``dcbrain serve`` or your own code run end to end, over real HTTP, without a model::

    python -m dcbrain.llm.fake_server --script replies.json --tokens-per-second 40 --port 8099

It prints ``listening on http://127.0.0.1:8099/v1`` once it accepts requests. Each
``POST /v1/chat/completions`` takes the next entry of the script (a JSON list):

- a string: a reply with that text;
- an object: ``content``, ``tool_calls`` (``[{"name": ..., "arguments": {...}}]``),
  ``finish_reason``, ``usage`` (``[prompt, completion]``, or ``false`` to leave it out),
  ``delay_s`` (seconds before answering), ``tokens_per_second`` (this reply's pace),
  ``cut_after`` (a stream breaks after that many tokens: the connection closes mid-reply),
  or ``status`` and ``error`` (an error answer in OpenAI's format instead).

A request with ``"stream": true`` gets server-sent chunks, one ``cl100k_base`` token each,
paced at ``tokens_per_second`` (unpaced without it), and a last chunk with the usage when
``stream_options.include_usage`` asks for it; otherwise one JSON completion, sent once
the reply's tokens would have been written at that pace. Usage is
counted as dcbrain counts it (the prompt's and the reply's ``cl100k_base`` tokens) unless
the entry gives its own. After the last entry every call is answered 400 "no scripted
reply" (or, with ``--repeat``, the script starts over). ``GET /v1/models`` lists the model.

In Python, :class:`ScriptedOpenAIServer` is the same server in a background thread; its
``requests`` are the JSON bodies it received.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dcbrain.llm.testing import token_pieces
from dcbrain.llm.tokens import count_message_tokens

#: Larger request bodies are refused (413): a test server must not be a memory sink.
MAX_REQUEST_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ScriptedReply:
    """One entry of the script (see the module's docstring for the JSON form)."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: tuple[int, int] | bool = True
    delay_s: float = 0.0
    tokens_per_second: float | None = None
    cut_after: int | None = None
    status: int = 200
    error: str = ""

    @classmethod
    def parse(cls, entry: Any, where: str) -> ScriptedReply:
        """An entry of a script; ``ValueError`` naming ``where`` when it is not one."""
        if isinstance(entry, str):
            return cls(content=entry)
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: a reply is a string or an object, "
                             f"got {type(entry).__name__}")
        known = {"content", "tool_calls", "finish_reason", "usage", "delay_s",
                 "tokens_per_second", "cut_after", "status", "error"}
        unknown = sorted(set(entry) - known)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        usage = entry.get("usage", True)
        if isinstance(usage, list) and len(usage) == 2 and all(
                isinstance(n, int) and n >= 0 for n in usage):
            usage = (usage[0], usage[1])
        elif not isinstance(usage, bool):
            raise ValueError(f"{where}.usage: [prompt, completion] tokens or false, "
                             f"got {usage!r}")
        calls = entry.get("tool_calls", [])
        if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
            raise ValueError(f"{where}.tool_calls: a list of {{\"name\": ..., "
                             f"\"arguments\": {{...}}}}, got {calls!r}")
        try:
            reply = cls(
                content=_typed(entry, "content", str, "", where),
                tool_calls=calls,
                finish_reason=_typed(entry, "finish_reason", str, None, where),
                usage=usage,
                delay_s=float(_typed(entry, "delay_s", (int, float), 0.0, where)),
                tokens_per_second=_typed(entry, "tokens_per_second", (int, float), None, where),
                cut_after=_typed(entry, "cut_after", int, None, where),
                status=_typed(entry, "status", int, 200, where),
                error=_typed(entry, "error", str, "", where),
            )
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        if reply.delay_s < 0 or (reply.tokens_per_second is not None
                                 and reply.tokens_per_second <= 0):
            raise ValueError(f"{where}: delay_s must be >= 0 and tokens_per_second > 0")
        if not 100 <= reply.status <= 599:
            raise ValueError(f"{where}.status: an HTTP status, got {reply.status}")
        return reply


def _typed(entry: dict[str, Any], key: str, kind: Any, default: Any, where: str) -> Any:
    value = entry.get(key, default)
    if value is default or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise TypeError(f"{where}.{key}: wrong type {type(value).__name__}")


def load_script(path: str | Path) -> list[ScriptedReply]:
    """The replies of a script file (a JSON list); ``ValueError`` naming what is wrong."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: the script is a JSON list of replies")
    return [ScriptedReply.parse(entry, f"{path}[{index}]") for index, entry in enumerate(entries)]


class ScriptedOpenAIServer:
    """The scripted server in a background thread on ``host:port`` (0: a free port)."""

    def __init__(
        self,
        replies: Iterable[ScriptedReply | str | dict[str, Any]],
        *,
        tokens_per_second: float | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "scripted-model",
        repeat: bool = False,
    ) -> None:
        self.replies = [r if isinstance(r, ScriptedReply) else ScriptedReply.parse(r, f"[{i}]")
                        for i, r in enumerate(replies)]
        if tokens_per_second is not None and tokens_per_second <= 0:
            raise ValueError(f"tokens_per_second must be positive, got {tokens_per_second}")
        self.tokens_per_second = tokens_per_second
        self.model = model
        self.repeat = repeat
        self.requests: list[dict[str, Any]] = []
        self._served = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _HTTPServer((host, port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def remaining(self) -> int:
        """Entries of the script not answered yet."""
        with self._lock:
            return max(len(self.replies) - self._served, 0)

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="scripted-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes paced and delayed answers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        try:
            self._httpd.serve_forever(0.05)
        finally:
            self._stopping.set()
            self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, body: dict[str, Any]) -> ScriptedReply | None:
        with self._lock:
            self.requests.append(body)
            if not self.replies or (self._served >= len(self.replies) and not self.repeat):
                return None
            reply = self.replies[self._served % len(self.replies)]
            self._served += 1
            return reply

    def _pause(self, reply: ScriptedReply) -> float:
        rate = reply.tokens_per_second or self.tokens_per_second
        return 0.0 if rate is None else 1.0 / rate

    def _usage(self, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, int] | None:
        if reply.usage is False:
            return None
        if isinstance(reply.usage, tuple):
            prompt, completion = reply.usage
        else:
            messages = body.get("messages")
            prompt = count_message_tokens(messages) if isinstance(messages, list) and all(
                isinstance(m, dict) for m in messages) else 0
            completion = len(token_pieces(reply.content))
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}

    def _completion(self, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(reply, streamed=False)
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": _finish_reason(reply)}],
        }
        usage = self._usage(reply, body)
        if usage is not None:
            completion["usage"] = usage
        return completion

    def _tool_calls(self, reply: ScriptedReply, *, streamed: bool) -> list[dict[str, Any]]:
        calls = []
        for index, call in enumerate(reply.tool_calls):
            arguments = call.get("arguments", {})
            entry: dict[str, Any] = {
                "id": f"call_{next(self._ids)}", "type": "function",
                "function": {"name": call["name"], "arguments": arguments
                             if isinstance(arguments, str) else json.dumps(arguments)},
            }
            if streamed:
                entry["index"] = index
            calls.append(entry)
        return calls

    def _chunks(
        self, reply: ScriptedReply, body: dict[str, Any]
    ) -> Iterable[dict[str, Any] | None]:
        """The stream's chunks; ``None`` where the stream is cut."""
        ident = f"chatcmpl-{next(self._ids)}"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": ident, "object": "chat.completion.chunk", "created": 0,
                    "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for sent, piece in enumerate(token_pieces(reply.content)):
            if reply.cut_after is not None and sent >= reply.cut_after:
                yield None
                return
            yield chunk({"content": piece})
        if reply.tool_calls:
            yield chunk({"tool_calls": self._tool_calls(reply, streamed=True)})
        yield chunk({}, _finish_reason(reply))
        options = body.get("stream_options")
        usage = self._usage(reply, body)
        if isinstance(options, dict) and options.get("include_usage") and usage is not None:
            yield {"id": ident, "object": "chat.completion.chunk", "created": 0,
                   "model": self.model, "choices": [], "usage": usage}


def _finish_reason(reply: ScriptedReply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


def _handler(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list",
                                 "data": [{"id": server.model, "object": "model"}]})
            else:
                self._error(404, f"no such path {self.path!r}")

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_REQUEST_BYTES:
                self._error(413, f"the body must be 0 to {MAX_REQUEST_BYTES} bytes")
                self.close_connection = True
                return
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, f"no such path {self.path!r}")
                return
            try:
                body = json.loads(raw or b"null")
            except (ValueError, RecursionError):  # not JSON, or nested too deeply
                body = None
            if not isinstance(body, dict):
                self._error(400, "the body is not a JSON object")
                return
            reply = server._next(body)
            if reply is None:
                self._error(400, "fake server: no scripted reply")
                return
            if reply.delay_s and server._stopping.wait(reply.delay_s):
                return
            if reply.status != 200:
                self._error(reply.status, reply.error or "scripted failure")
            elif body.get("stream") is True:
                self._stream(reply, body)
            else:  # a model takes as long to write a reply it sends at once
                writing_s = server._pause(reply) * len(token_pieces(reply.content))
                if writing_s and server._stopping.wait(writing_s):
                    return
                self._json(200, server._completion(reply, body))

        def _stream(self, reply: ScriptedReply, body: dict[str, Any]) -> None:
            pause = server._pause(reply)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                began = time.monotonic()
                for index, chunk in enumerate(server._chunks(reply, body)):
                    if chunk is None:  # cut: the connection closes without the last chunk
                        self.close_connection = True
                        return
                    # on a schedule, so a late wake-up does not slow the rest of the reply
                    due = began + max(index - 1, 0) * pause - time.monotonic()
                    if due > 0 and server._stopping.wait(due):
                        return
                    self._send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                self._send_chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client stopped reading (cancelled)

        def _send_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _json(self, status: int, value: Any) -> None:
            payload = json.dumps(value, ensure_ascii=False).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _error(self, status: int, message: str) -> None:
            self._json(status, {"error": {"message": message, "type": "fake_error",
                                          "code": status}})

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a test's output stays its own

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dcbrain.llm.fake_server",
        description="An OpenAI-compatible chat-completions server answering from a script.")
    parser.add_argument("--script", required=True, help="JSON file: the list of replies")
    parser.add_argument("--tokens-per-second", type=float, default=None,
                        help="pace of streamed replies (default: unpaced)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (the default): a free port")
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--repeat", action="store_true",
                        help="start the script over after its last reply")
    args = parser.parse_args(argv)
    try:
        replies = load_script(args.script)
        server = ScriptedOpenAIServer(replies, tokens_per_second=args.tokens_per_second,
                                      host=args.host, port=args.port, model=args.model,
                                      repeat=args.repeat)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"listening on {server.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
