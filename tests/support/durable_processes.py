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

from support.configs import fake_llm_toml
from support.fake_openai import FakeOpenAIServer, FakeResponse, RecordedRequest
from support.waiting import wait_until

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
    approvals = "".join(f"[tool.{name}]\nrequires_approval = true\n" for name in approval)
    config.write_text('tools = ["tools.py"]\n' + fake_llm_toml(llm, memory="brain.db",
                                                               extra=approvals))
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
                 timeout_s: float = 60, path: str = "/v1/health") -> None:
    """Until ``path`` (default ``/v1/health``) answers 200, the process still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(base_url + path).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"{path} not 200 in time:\n{log.read_text()}"
        time.sleep(0.05)


def wait_for_line(log: Path, text: str, process: subprocess.Popen[bytes],
                  timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{text!r} not in time:\n{log.read_text()}"
        time.sleep(0.05)


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
    wait_healthy(process, base_url, log, timeout_s, path="/v1/ready")


def send_message(base_url: str, conversation_id: str, content: str) -> str:
    """Post a message to the server at ``base_url``; the run's id."""
    response = httpx.post(f"{base_url}/v1/conversations/{conversation_id}/messages",
                          json={"content": content})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def read_run(base_url: str, run_id: str) -> dict[str, Any]:
    """The run as the server at ``base_url`` shows it."""
    run: dict[str, Any] = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
    return run


class Cluster:
    """The ``dcbrain serve`` / ``worker`` processes of one test, on one config of the
    counting tools in ``directory``: started by name (one log each), talked to over HTTP,
    killed or stopped by name; :meth:`close` stops whatever still runs."""

    def __init__(self, directory: Path, llm: FakeOpenAIServer, *, delay_s: float,
                 approval: tuple[str, ...] = ()) -> None:
        answer_every_run(llm)
        self.directory = directory
        self.llm = llm
        self.config = write_config(directory, llm, delay_s=delay_s, approval=approval)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def start(self, name: str, args: list[str], *,
              env_vars: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """``dcbrain ARGS`` as process ``name`` (its log: ``NAME.log``)."""
        process = start(args, self.log(name), env_vars=env_vars)
        self.processes[name] = process
        return process

    def serve(self, *extra: str, name: str = "serve", db: str | None = None,
              env_vars: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """``dcbrain serve`` on this cluster's port (with ``--db DB``), once healthy."""
        args = ["serve", "--config", str(self.config), "--port", str(self.port),
                *(["--db", db] if db else []), *extra]
        process = self.start(name, args, env_vars=env_vars)
        wait_healthy(process, self.base_url, self.log(name))
        return process

    def api(self, db: str, *extra: str, name: str = "api", ready: bool = False,
            env_vars: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """An API node (``--role api``) on ``db``, once healthy (``ready``: once
        ``/v1/ready`` says a worker is there too)."""
        process = self.serve("--role", "api", *extra, name=name, db=db, env_vars=env_vars)
        if ready:
            wait_ready(process, self.base_url, self.log(name))
        return process

    def worker(self, name: str, db: str, *extra: str,
               env_vars: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """``dcbrain worker --executor-id NAME`` on ``db``, once it says it is ready."""
        args = ["worker", "--config", str(self.config), "--db", db,
                "--executor-id", name, *extra]
        process = self.start(name, args, env_vars=env_vars)
        wait_for_line(self.log(name), "ready", process)
        return process

    def kill_during(self, run_id: str, call: str, name: str = "serve") -> None:
        """SIGKILL process ``name`` while tool ``call`` of the run runs, once the run's
        stored events show it started (what a crash cannot take back)."""
        wait_until(lambda: count(self.directory, call, "started") == 1, what=f"{call} running")
        self.wait_until_stored(run_id, call)
        self.kill(name)

    def kill(self, name: str) -> None:
        """SIGKILL process ``name`` and wait for its end."""
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def close(self) -> None:
        for process in self.processes.values():
            stop(process)

    # -- over HTTP -------------------------------------------------------------------------

    def send(self, conversation_id: str = "c1", content: str = "go") -> str:
        """Post a message; the run's id."""
        return send_message(self.base_url, conversation_id, content)

    def run(self, run_id: str) -> dict[str, Any]:
        return read_run(self.base_url, run_id)

    def status(self, run_id: str) -> str:
        return str(self.run(run_id)["status"])

    def wait_status(self, run_ids: list[str], status: str, *, timeout_s: float = 60) -> None:
        """Until every run of ``run_ids`` has ``status``."""
        wait_until(lambda: all(self.status(run_id) == status for run_id in run_ids),
                   timeout_s=timeout_s, what=f"every run {status}")

    def approve_and_finish(self, run_id: str, tool: str) -> tuple[dict[str, Any], str]:
        """Approve the run's one pending call of ``tool``; the run once it succeeded, and
        its event stream."""
        self.approve(run_id, tool)
        self.wait_status([run_id], "succeeded")
        return self.run(run_id), self.stream(run_id)

    def wait_ended(self, run_ids: list[str], *, timeout_s: float = 120) -> list[dict[str, Any]]:
        """Until no run of ``run_ids`` is queued or running; the runs then."""
        wait_until(lambda: all(self.status(r) not in ("queued", "running") for r in run_ids),
                   timeout_s=timeout_s, what="every run's end")
        return [self.run(run_id) for run_id in run_ids]

    def stream(self, run_id: str) -> str:
        """The run's whole event stream (it has ended)."""
        return httpx.get(f"{self.base_url}/v1/runs/{run_id}/events", timeout=30).text

    def stored_events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's stored events (those with a ``seq``), from its ended stream."""
        events = [json.loads(line[len("data: "):]) for line in self.stream(run_id).splitlines()
                  if line.startswith("data: ")]
        return [event for event in events if "seq" in event]

    def wait_until_stored(self, run_id: str, call: str) -> None:
        """Read the run's stream (stored events only) up to the start of ``call``."""
        url = f"{self.base_url}/v1/runs/{run_id}/events"
        with httpx.stream("GET", url, timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith("data: ") and '"call_started"' in line:
                    event = json.loads(line[len("data: "):])
                    if event.get("name") == call:
                        return
        raise AssertionError(f"the run ended before {call} started")

    def approve(self, run_id: str, tool: str) -> None:
        """Approve the run's one pending request (a call of ``tool``)."""
        [request] = self.run(run_id)["approvals"]
        assert (request["tool"], request["decision"]) == (tool, None)
        response = httpx.post(
            f"{self.base_url}/v1/runs/{run_id}/approvals/{request['call_id']}",
            json={"approved": True, "args_hash": request["args_hash"]})
        assert response.status_code == 200, response.text

    def started(self, *names: str) -> list[int]:
        """How many calls of each tool of ``names`` started."""
        return [count(self.directory, name, "started") for name in names]


def assert_approved_once(nodes: Cluster, run: dict[str, Any], stream: str) -> None:
    """The run of :data:`PLAN` that waited for ``step_two``'s approval finished with every
    step run once, one plan, one request and one decision."""
    assert run["result"]["final_result"] == 4
    assert nodes.started("step_one", "step_two", "step_three") == [1, 1, 1]
    assert planner_requests(nodes.llm) == 1
    assert stream.count('"type":"approval_requested"') == 1
    assert stream.count('"type":"approval_decided"') == 1 and stream.count("event: end") == 1
