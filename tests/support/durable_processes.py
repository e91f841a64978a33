"""Real ``dcbrain serve`` / ``dcbrain worker`` processes on a config whose tools count calls.

The LLM is a fake OpenAI-compatible server answering every planner request with a plan
calling three slow tools and every validator request with "solved". The tools append a
line to ``<counters>/<tool>.started`` / ``.finished`` (shared by every process).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from support.fake_openai import FakeOpenAIServer, FakeResponse, RecordedRequest

PLAN = "a = step_one(x=1)\nb = step_two(x=a)\nc = step_three(x=b)\nreturn c"

TOOLS = '''\
import os
import time
from pathlib import Path

from dcbrain.journal import current_call

COUNTERS = Path({counters!r})
DELAY_S = {delay_s!r}


def _mark(name, phase):
    call = current_call()
    key = call.idempotency_key if call is not None else "-"
    with (COUNTERS / f"{{name}}.{{phase}}").open("a") as out:
        out.write(f"{{time.time()}} {{os.getpid()}} {{key}}\\n")


def _step(name, x):
    _mark(name, "started")
    time.sleep(DELAY_S)
    _mark(name, "finished")
    return x + 1


def step_one(x: int) -> int:
    """Add one (slowly)."""
    return _step("step_one", x)


def step_two(x: int) -> int:
    """Add one (slowly)."""
    return _step("step_two", x)


def step_three(x: int) -> int:
    """Add one (slowly)."""
    return _step("step_three", x)
'''


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answer_every_run(llm: FakeOpenAIServer, *, latency_s: float = 0.0) -> None:
    """Plans for planner requests, "solved" for validator requests, in any order."""

    def handle(request: RecordedRequest) -> FakeResponse:
        validating = request.response_format is not None
        content = (json.dumps({"is_solved": True, "suggestion": ""}) if validating
                   else f"```tf_plan\n{PLAN}\n```")
        body = json.dumps(llm.completion(content, request=request)).encode()
        return FakeResponse(body=body, headers={"Content-Type": "application/json"},
                            delay_s=latency_s)

    llm.handler = handle


def write_config(directory: Path, llm: FakeOpenAIServer, *, delay_s: float,
                 approval: tuple[str, ...] = ()) -> Path:
    """The config of the counting tools; the tools named in ``approval`` wait for a
    person's decision (``[tool.NAME] requires_approval``)."""
    counters = directory / "counters"
    counters.mkdir(parents=True, exist_ok=True)
    (directory / "tools.py").write_text(TOOLS.format(counters=str(counters), delay_s=delay_s))
    config = directory / "dcbrain.toml"
    config.write_text(
        'tools = ["tools.py"]\n[llm.main]\n'
        f'base_url = "{llm.base_url}"\nmodel = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\n[memory]\npath = "brain.db"\n'
        + "".join(f"[tool.{name}]\nrequires_approval = true\n" for name in approval)
    )
    return config


def count(directory: Path, name: str, phase: str, pid: int | None = None) -> int:
    """How many calls of tool ``name`` reached ``phase`` (in process ``pid`` only, if given)."""
    return sum(1 for _, found, _ in marks(directory, name, phase)
               if pid is None or found == pid)


def marks(directory: Path, name: str, phase: str) -> list[tuple[float, int, str]]:
    """When, in which process and as which call (its idempotency key) each call of tool
    ``name`` reached ``phase``."""
    path = directory / "counters" / f"{name}.{phase}"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(float(when), int(pid), key) for when, pid, key in
            (line.split(maxsplit=2) for line in lines)]


def planner_requests(llm: FakeOpenAIServer) -> int:
    """How many planning requests the LLM server answered."""
    return sum(1 for request in llm.requests if request.response_format is None)


def start(args: list[str], log: Path, extra_path: str | None = None, *,
          env_vars: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python -m dcbrain.cli ARGS`` with this test's code (after ``extra_path``, if
    given), ``env_vars`` set and a log file."""
    paths = [extra_path] if extra_path else []
    env = dict(os.environ, FAKE_API_KEY="sk-test", PYTHONPATH=os.pathsep.join([*paths, *sys.path]),
               **(env_vars or {}))
    env.pop("DCBRAIN_API_TOKEN", None)
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "dcbrain.cli", *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def wait_healthy(process: subprocess.Popen[bytes], base_url: str, log: Path,
                 timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(base_url + "/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"not healthy in time:\n{log.read_text()}"
        time.sleep(0.05)


def wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes],
                  timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{text!r} not in time:\n{log.read_text()}"
        time.sleep(0.05)


def wait_until(predicate: Any, timeout_s: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout_s} s"
        time.sleep(0.02)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(process: subprocess.Popen[bytes], base_url: str, log: Path,
               timeout_s: float = 60) -> None:
    """Until ``/v1/ready`` answers 200 (the database is there and, for an API node, a worker)."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(base_url + "/v1/ready").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"not ready in time:\n{log.read_text()}"
        time.sleep(0.05)
