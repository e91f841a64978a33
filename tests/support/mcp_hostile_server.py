"""A hostile MCP server for the tests, speaking raw JSON-RPC: stdio, or ``--http PORT``.

    --tools NAMES       the tools it lists (comma-separated); each answers
                        "NAME from the server: ARGUMENTS"
    --big BYTES|endless adds a tool ``big`` whose text result is BYTES long (streamed out,
                        never built in memory), or never ends
    --pages N|endless   tools/list answers N pages (or pages forever), each with
                        --per-page made-up tools and a next cursor
    --gzip              HTTP answers are gzip-encoded (whatever the client asked for)
    --slow SECONDS      adds a tool ``slow`` that answers after SECONDS
    --drop N            over HTTP, the first N tools/call requests get no answer: the
                        connection is closed under them
    --exit-once PATH    over stdio, the first tools/call of the first server started with
                        this PATH exits the process unanswered (PATH marks that it did)
    --description N     each tool's description is N characters long
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHUNK = "x" * (1 << 20)


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--tools", default="echo")
    parser.add_argument("--big")
    parser.add_argument("--pages")
    parser.add_argument("--per-page", type=int, default=0)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--slow", type=float)
    parser.add_argument("--drop", type=int, default=0)
    parser.add_argument("--exit-once")
    parser.add_argument("--description", type=int)
    return parser.parse_args()


OPTIONS = options()
NAMES = [name for name in OPTIONS.tools.split(",") if name]
DROPPED = [0]  # tools/call requests dropped so far


def tool(name: str) -> dict[str, Any]:
    described = f"{name}, as the server has it"
    if OPTIONS.description is not None:
        described = (described + " " + "blah " * OPTIONS.description)[:OPTIONS.description]
    return {"name": name, "description": described,
            "inputSchema": {"type": "object", "additionalProperties": True}}


def listing(cursor: str | None) -> dict[str, Any]:
    if OPTIONS.pages is None:
        return {"tools": [tool(name) for name in NAMES]
                + ([tool("big")] if OPTIONS.big is not None else [])
                + ([tool("slow")] if OPTIONS.slow is not None else [])}
    page = int(cursor or 0)
    tools = [tool(f"t{page}_{index}") for index in range(OPTIONS.per_page)]
    last = OPTIONS.pages != "endless" and page + 1 >= int(OPTIONS.pages)
    return {"tools": tools, **({} if last else {"nextCursor": str(page + 1)})}


def answer(message: dict[str, Any]) -> Iterator[str]:
    """The JSON text of the answer to ``message``, in pieces (none for a notification)."""
    if "id" not in message:
        return
    ident, method, params = message["id"], message.get("method"), message.get("params") or {}
    head = json.dumps({"jsonrpc": "2.0", "id": ident})[:-1]
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}
    elif method == "tools/list":
        result = listing(params.get("cursor"))
    elif method == "tools/call" and params.get("name") == "big":
        yield head + ', "result": {"content": [{"type": "text", "text": "'
        left = float("inf") if OPTIONS.big == "endless" else int(OPTIONS.big)
        while left > 0:
            yield CHUNK[:int(min(left, len(CHUNK)))]
            left -= len(CHUNK)
        yield '"}]}}'
        return
    elif method == "tools/call":
        name = params.get("name")
        if name == "slow":
            time.sleep(OPTIONS.slow or 0)
        text = f"{name} from the server: {json.dumps(params.get('arguments'))}"
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        yield json.dumps({"jsonrpc": "2.0", "id": ident,
                          "error": {"code": -32601, "message": f"no method {method}"}})
        return
    yield head + ", " + json.dumps({"result": result})[1:]


def exits_now(line: str) -> bool:
    """Whether this stdio server dies on ``line`` (see ``--exit-once``)."""
    if OPTIONS.exit_once is None or '"tools/call"' not in line:
        return False
    marker = Path(OPTIONS.exit_once)
    if marker.exists():
        return False
    marker.write_text("exited")
    return True


def serve_stdio() -> None:
    for line in sys.stdin:
        if exits_now(line):
            sys.exit(1)
        wrote = False
        for piece in answer(json.loads(line)) if line.strip() else ():
            sys.stdout.write(piece)
            wrote = True
        if wrote:
            sys.stdout.write("\n")
            sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        message = json.loads(body)
        if message.get("method") == "tools/call" and DROPPED[0] < OPTIONS.drop:
            DROPPED[0] += 1
            self.close_connection = True  # no status line: the client sees the drop
            return
        if next(answer(message), None) is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        pieces: Iterator[bytes] = (piece.encode() for piece in answer(message))
        if OPTIONS.gzip:
            data = gzip.compress(b"".join(pieces))
            pieces, length = iter([data]), len(data)
        else:
            length = sum(len(piece.encode()) for piece in answer(message))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("mcp-session-id", "s1")
        if OPTIONS.gzip:
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(length))
        self.end_headers()
        try:
            for piece in pieces:
                self.wfile.write(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    if OPTIONS.http is not None:
        ThreadingHTTPServer(("127.0.0.1", OPTIONS.http), Handler).serve_forever()
    else:
        serve_stdio()
