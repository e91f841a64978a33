"""MCP servers for the tests: the SDK's own server code, over stdio and over HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CALC_SERVER = Path(__file__).with_name("mcp_calc_server.py")
SCHEMA_SERVER = Path(__file__).with_name("mcp_schema_server.py")
"""A server whose one tool, ``lookup``, has the input schema given as JSON in its argument."""
MAIL_SERVER = Path(__file__).with_name("mcp_mail_server.py")
"""A mail server whose inbox holds an injection (``inbox``, ``directory``, ``send``, ``sent``)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@contextmanager
def calc_http_server() -> Iterator[str]:
    """The calc server over streamable HTTP on a free 127.0.0.1 port: its URL."""
    with _http_server([sys.executable, str(CALC_SERVER)]) as url:
        yield url


@contextmanager
def mail_http_server() -> Iterator[str]:
    """The mail server over streamable HTTP on a free 127.0.0.1 port: its URL."""
    with _http_server([sys.executable, str(MAIL_SERVER)]) as url:
        yield url


@contextmanager
def _http_server(argv: list[str]) -> Iterator[str]:
    """The MCP server ``argv`` started with ``--http PORT`` on a free port: its URL."""
    port = free_port()
    process = subprocess.Popen([*argv, "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


HOSTILE_SERVER = Path(__file__).with_name("mcp_hostile_server.py")


def hostile_command(*options: str) -> list[str]:
    """The command line of the hostile stdio server with ``options``."""
    return [sys.executable, str(HOSTILE_SERVER), *options]


@contextmanager
def hostile_http_server(*options: str) -> Iterator[str]:
    """The hostile server over HTTP (JSON answers) on a free 127.0.0.1 port: its URL."""
    with _http_server(hostile_command(*options)) as url:
        yield url
