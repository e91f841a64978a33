"""Real ``dcbrain serve`` / ``worker`` processes whose runs take as long as their message says.

A message ``nap S`` is planned (by a fake OpenAI-compatible server) as ``return nap(seconds=S)``;
the tool sleeps ``S`` seconds and appends a line to ``<counters>/nap.started`` / ``.finished``.
:class:`StreamReader` follows a run's event stream in a thread, as a browser would.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from support.configs import fake_llm_toml
from support.durable_processes import free_port
from support.fake_openai import FakeOpenAIServer, FakeResponse, RecordedRequest
from support.server_app import sse_messages

TOOLS = '''\
import os
import time
from pathlib import Path

COUNTERS = Path({counters!r})


def _mark(phase, seconds):
    with (COUNTERS / f"nap.{{phase}}").open("a") as out:
        out.write(f"{{seconds}} {{os.getpid()}}\\n")


def nap(seconds: float) -> float:
    """Sleep for a while."""
    _mark("started", seconds)
    time.sleep(seconds)
    _mark("finished", seconds)
    return seconds
'''

_NAP = re.compile(r"nap (\d+(?:\.\d+)?)")


def plan_naps(llm: FakeOpenAIServer) -> None:
    """``return nap(seconds=S)`` for a planner request about ``nap S``; "solved" otherwise."""

    def handle(request: RecordedRequest) -> FakeResponse:
        if request.response_format is not None:
            content = json.dumps({"is_solved": True, "suggestion": ""})
        else:
            asked = _NAP.findall(json.dumps(request.messages))
            content = f"```tf_plan\nreturn nap(seconds={asked[-1] if asked else 0})\n```"
        body = json.dumps(llm.completion(content, request=request)).encode()
        return FakeResponse(body=body, headers={"Content-Type": "application/json"})

    llm.handler = handle


def write_nap_config(directory: Path, llm: FakeOpenAIServer) -> Path:
    counters = directory / "counters"
    counters.mkdir(parents=True, exist_ok=True)
    (directory / "tools.py").write_text(TOOLS.format(counters=str(counters)))
    config = directory / "dcbrain.toml"
    config.write_text('tools = ["tools.py"]\n' + fake_llm_toml(llm, memory="brain.db"))
    return config


def nap_server(directory: Path, llm: FakeOpenAIServer) -> tuple[Path, int, str]:
    """Plan naps, write their config: the config, a free port and its base URL."""
    plan_naps(llm)
    port = free_port()
    return write_nap_config(directory, llm), port, f"http://127.0.0.1:{port}"


def naps(directory: Path, phase: str, seconds: float | None = None) -> int:
    """How many ``nap`` calls reached ``phase`` (of ``seconds`` only, if given)."""
    path = directory / "counters" / f"nap.{phase}"
    lines = path.read_text().splitlines() if path.exists() else []
    return sum(1 for line in lines if seconds is None or float(line.split()[0]) == seconds)


def post(base_url: str, cid: str, content: str) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/conversations/{cid}/messages", json={"content": content},
                      timeout=30)


def exits_within(process: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Seconds ``process`` took to exit; fails (and kills it) beyond ``timeout_s``."""
    started = time.monotonic()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the process did not exit within {timeout_s} s") from None
    return time.monotonic() - started


@dataclass
class StreamReader:
    """Reads a run's event stream in a thread until the server ends or drops it."""

    base_url: str
    run_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        self.opened = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        assert self.opened.wait(30), f"the stream of {self.run_id} did not open"

    def _read(self) -> None:
        try:
            with httpx.stream("GET", f"{self.base_url}/v1/runs/{self.run_id}/events",
                              timeout=httpx.Timeout(60)) as response:
                assert response.status_code == 200, response.read()
                self.opened.set()
                for message in sse_messages(response):
                    if message.event == "end":
                        self.end = message.data
                        return
                    self.events.append(message.data)
        except (httpx.HTTPError, AssertionError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.opened.set()

    def join(self, timeout_s: float = 30) -> StreamReader:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), f"the stream of {self.run_id} is still open"
        return self

    @property
    def final(self) -> dict[str, Any] | None:
        finals = [event for event in self.events if event.get("type") == "final"]
        return finals[-1] if finals else None
