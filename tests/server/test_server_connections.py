"""Connection limits: clients that connect and never finish a request cannot starve others."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.server import create_app
from dcbrain.server.connections import ConnectionLimits
from dcbrain.server.testing import serve_in_thread
from support.server_app import PATIENCE_S, BrainScripts, wait_until_listening

HALF_REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
HEAD_OF_A_BODY = (b"POST /v1/conversations/c1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"con")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def half_open(port: int, count: int, start: bytes = HALF_REQUEST) -> Iterator[list[socket.socket]]:
    """``count`` connections that each send ``start`` and then nothing."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
            sock.sendall(start)
            sockets.append(sock)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (waits at most the socket's timeout)."""
    try:
        while data := sock.recv(4096):
            if b"too many connections" in data or b"HTTP/1.1" in data:
                continue
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_half_open_connections_past_the_file_limit_leave_health_answering(
    tmp_path: Path
) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text('[llm.main]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                      'api_key_env = "FAKE_API_KEY"\n[memory]\npath = "brain.db"\n')
    port = free_port()
    env = dict(os.environ, FAKE_API_KEY="sk-test", PYTHONPATH=os.pathsep.join(sys.path))
    process = subprocess.Popen(  # a process of 256 file descriptors, the rest as deployed
        [sys.executable, "-m", "dcbrain.cli", "serve", "--config", str(config),
         "--port", str(port), "--head-timeout", "2"],
        env=env, stderr=subprocess.PIPE, text=True, preexec_fn=limit_open_files,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_listening(process, base_url, 3 * PATIENCE_S)  # a busy machine is slow
        with half_open(port, 300) as sockets:  # more than the process has descriptors
            health = httpx.get(base_url + "/v1/health", timeout=10)
            closed = [closed_by_server(sock) for sock in sockets]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=PATIENCE_S)

    assert health.status_code == 200
    assert all(closed)  # either to make room, or at the head deadline
    assert "leaves room for 64 connections" in stderr


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """A server of at most 40 connections and half-second deadlines; (port, base URL)."""
    memory = SQLiteMemory(tmp_path / "server.db")
    app = create_app(Runtime(store=memory, brains=BrainScripts(memory)))
    limits = ConnectionLimits(max_connections=40, head_timeout_s=0.5, body_timeout_s=0.5)
    with serve_in_thread(app, limits=limits) as base_url:
        yield int(base_url.rsplit(":", 1)[1]), base_url
    memory.close()


def test_connections_that_never_finish_their_head_or_body_are_closed(
    limited: tuple[int, str]
) -> None:
    port, base_url = limited
    with half_open(port, 100) as heads, half_open(port, 10, HEAD_OF_A_BODY) as bodies:
        health = httpx.get(base_url + "/v1/health", timeout=10)
        closed = [closed_by_server(sock) for sock in heads + bodies]
    assert health.status_code == 200
    assert all(closed)


def test_a_connection_beyond_the_cap_is_refused_when_every_one_is_busy(
    tmp_path: Path
) -> None:
    memory = SQLiteMemory(tmp_path / "server.db")
    app = create_app(Runtime(store=memory, brains=BrainScripts(memory)))
    limits = ConnectionLimits(max_connections=3, body_timeout_s=PATIENCE_S)
    with serve_in_thread(app, limits=limits) as base_url:
        port = int(base_url.rsplit(":", 1)[1])
        with half_open(port, 3, HEAD_OF_A_BODY):  # each is sending its body: busy
            deadline = time.monotonic() + PATIENCE_S
            while True:  # once the server has taken all three
                refused = httpx.get(base_url + "/v1/health", timeout=10)
                if refused.status_code != 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        answered = httpx.get(base_url + "/v1/health", timeout=10)
    memory.close()
    assert (refused.status_code, refused.text) == (503, "too many connections")
    assert answered.status_code == 200
