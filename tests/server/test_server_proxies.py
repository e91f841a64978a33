"""Who a client is, for the caps per client: the socket's peer, unless a listed proxy says.

``X-Forwarded-For`` is read only from the proxies ``--forwarded-allow-ips`` lists
(uvicorn's semantics); the client is then the right-most address no listed proxy has.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.server import ServerSettings, create_app
from dcbrain.server.protocol import trusted_proxies
from dcbrain.server.testing import serve_in_thread
from support.server_app import PATIENCE_S, Api, BrainScripts

PER_CLIENT = 2


@contextlib.contextmanager
def _held_run(brains: BrainScripts, memory: SQLiteMemory,
              forwarded_allow_ips: str | None) -> Iterator[str]:
    """The events URL of a run that stays live, on a server capping streams per client."""
    gate = brains.hold()
    app = create_app(Runtime(store=memory, brains=brains),
                     ServerSettings(max_streams_per_client=PER_CLIENT))
    with serve_in_thread(app, forwarded_allow_ips=forwarded_allow_ips) as base_url:
        api = Api(base_url)
        try:
            run_id = api.send_held("c1", "hold on", gate)
            yield f"{base_url}/v1/runs/{run_id}/events"
        finally:
            gate.opened.set()
            api.http.close()


def _open(stack: contextlib.ExitStack, url: str, forwarded_for: str) -> int:
    """Open a stream (kept open until ``stack`` closes) claiming ``forwarded_for``."""
    client = stack.enter_context(httpx.Client(timeout=PATIENCE_S))
    response = stack.enter_context(
        client.stream("GET", url, headers={"X-Forwarded-For": forwarded_for}))
    return response.status_code


def test_without_trusted_proxies_x_forwarded_for_does_not_make_new_clients(
    brains: BrainScripts, memory: SQLiteMemory
) -> None:
    with _held_run(brains, memory, None) as url, contextlib.ExitStack() as stack:
        statuses = [_open(stack, url, f"10.0.0.{i}") for i in range(1, 5)]
    assert statuses == [200, 200, 429, 429]  # every stream is the loopback peer's


def test_behind_a_listed_proxy_each_forwarded_client_has_its_own_cap(
    brains: BrainScripts, memory: SQLiteMemory
) -> None:
    with _held_run(brains, memory, "127.0.0.1") as url, contextlib.ExitStack() as stack:
        first = [_open(stack, url, "10.0.0.1") for _ in range(3)]
        second = _open(stack, url, "10.0.0.2")
        # A client's own X-Forwarded-For comes first; the proxy appends the real peer.
        spoofed = _open(stack, url, "10.9.9.9, 10.0.0.1")
    assert first == [200, 200, 429]
    assert second == 200
    assert spoofed == 429  # the right-most untrusted address is the client: 10.0.0.1


def test_forwarded_allow_ips_takes_addresses_networks_or_a_star() -> None:
    assert trusted_proxies(None) == ""
    assert trusted_proxies(" 10.0.0.5, 10.1.0.0/16 ,::1") == "10.0.0.5,10.1.0.0/16,::1"
    assert trusted_proxies("*") == "*"
    with pytest.raises(ValueError, match=r"'proxy\.local' is not an IP address"):
        trusted_proxies("10.0.0.5,proxy.local")
    with pytest.raises(ValueError, match="is empty"):
        trusted_proxies(" , ")


def test_serve_with_a_bad_forwarded_allow_ips_exits_2_naming_the_entry(tmp_path: Path) -> None:
    (tmp_path / "dcbrain.toml").write_text(
        '[llm.main]\nmodel = "m"\napi_key = "none"\n[memory]\npath = "s.db"\n')
    done = subprocess.run(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--forwarded-allow-ips", "10.0.0.0/8,lb"],
        cwd=tmp_path, capture_output=True, text=True, timeout=PATIENCE_S,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 2
    assert done.stderr == ("error: --forwarded-allow-ips: 'lb' is not an IP address, a network "
                           "such as 10.0.0.0/8, or *\n")
