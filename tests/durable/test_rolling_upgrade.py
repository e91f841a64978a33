"""A rolling upgrade: the old version's last worker dies mid-run while a new-version worker
lives. The run is reported stranded, not taken or lost; an operator resumes it on purpose."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg

from support.durable_processes import (
    answer_every_run,
    count,
    free_port,
    planner_requests,
    start,
    stop,
    wait_healthy,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer

TOOLS = ("step_one", "step_two", "step_three")
OLD, NEW = "v1-old", "v2-new"


def _runs_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("DCBRAIN_APP_VERSION", None)
    return subprocess.run([sys.executable, "-m", "dcbrain.cli", "runs", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _worker_rows(postgres_url: str) -> dict[str, str | None]:
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT executor_id, app_version FROM dcbrain_workers").fetchall()
    return {row[0]: row[1] for row in rows}


def test_a_run_of_a_version_without_workers_is_stranded_then_resumed_under_the_new_one(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=1.0)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    logs = {name: tmp_path / f"{name}.log" for name in ("old", "new", "api")}
    processes: dict[str, subprocess.Popen[bytes]] = {}

    def status() -> str:
        return str(httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"])

    try:
        processes["old"] = start(["worker", "--config", str(config), "--db", postgres_url,
                                  "--executor-id", "old", "--app-version", OLD], logs["old"])
        wait_until(lambda: "ready" in logs["old"].read_text(), what="old worker ready")
        processes["api"] = start(["serve", "--config", str(config), "--db", postgres_url,
                                  "--role", "api", "--port", str(port)], logs["api"],
                                 env_vars={"DCBRAIN_APP_VERSION": OLD})
        wait_healthy(processes["api"], base_url, logs["api"])
        processes["new"] = start(["worker", "--config", str(config), "--db", postgres_url,
                                  "--executor-id", "new"], logs["new"],
                                 env_vars={"DCBRAIN_APP_VERSION": NEW})
        wait_until(lambda: "ready" in logs["new"].read_text(), what="new worker ready")
        run_id = httpx.post(f"{base_url}/v1/conversations/c1/messages",
                            json={"content": "go"}).json()["run_id"]
        old_pid, new_pid = processes["old"].pid, processes["new"].pid
        wait_until(lambda: count(tmp_path, "step_two", "started", old_pid) > 0,
                   what="the old worker in the middle of the run")
        processes["old"].send_signal(signal.SIGKILL)
        processes["old"].wait()

        wait_until(lambda: status() == "stranded", timeout_s=90, what="the run stranded")
        warning = logs["new"].read_text()
        kept_rows = _worker_rows(postgres_url)
        new_calls_before_resume = sum(count(tmp_path, name, "started", new_pid)
                                      for name in TOOLS)
        refused = _runs_cli("resume", run_id, "--db", postgres_url, "--app-version", NEW)
        resumed = _runs_cli("resume", run_id, "--db", postgres_url, "--app-version", NEW,
                            "--any-version")
        wait_until(lambda: status() not in ("queued", "running", "stranded"), timeout_s=90,
                   what="the resumed run's end")
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        stream = httpx.get(f"{base_url}/v1/runs/{run_id}/events", timeout=30).text
    finally:
        for process in processes.values():
            stop(process)

    # Reported, not taken over or deleted: a warning naming the run and its version, the
    # dead worker's heartbeat row kept, no call executed by the other version.
    assert f"stranded run(s) {run_id}: application version {OLD}" in warning, warning
    assert "worker old is silent" not in warning
    assert kept_rows == {"old": OLD, "new": NEW}
    assert new_calls_before_resume == 0
    # Resuming under its own version is refused (no worker runs it), with the way out named.
    assert refused.returncode == 1, refused
    assert f"no live worker runs application version {OLD}" in refused.stderr
    assert "--any-version" in refused.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"run_id": run_id, "status": "queued",
                                          "resumed_from_version": OLD,
                                          "resumed_under_version": NEW}
    assert run["status"] == "succeeded", run
    assert run["result"]["final_result"] == 4
    assert stream.count("event: end") == 1
    # Finished calls ran once: the new worker answered them from the journal and ran only
    # the call the kill cut off, and the rest; the plan was not asked for again.
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [1, 1, 1]
    assert count(tmp_path, "step_one", "started") == 1
    assert count(tmp_path, "step_two", "started") == 2
    assert count(tmp_path, "step_three", "started", new_pid) == 1
    assert planner_requests(fake_openai) == 1


def test_serve_restarted_under_another_version_reports_its_old_run_stranded(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=1.0)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(config), "--port", str(port)]
    log = tmp_path / "serve.log"
    first = start(args, log, env_vars={"DCBRAIN_APP_VERSION": OLD})
    try:
        wait_healthy(first, base_url, log)
        run_id = httpx.post(f"{base_url}/v1/conversations/c1/messages",
                            json={"content": "go"}).json()["run_id"]
        wait_until(lambda: count(tmp_path, "step_two", "started") == 1, what="step_two running")
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    second = start(args, log, env_vars={"DCBRAIN_APP_VERSION": NEW})
    try:
        wait_healthy(second, base_url, log)
        wait_until(lambda: httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"]
                   == "stranded", what="the old run stranded")
        aborted = httpx.post(f"{base_url}/v1/runs/{run_id}/abort", json={})
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        stream = httpx.get(f"{base_url}/v1/runs/{run_id}/events", timeout=30).text
    finally:
        stop(second)
    assert f"stranded run(s) {run_id}: application version {OLD}" in log.read_text()
    assert aborted.status_code == 202
    assert (run["status"], run["reason"]) == ("aborted", "aborted")
    assert stream.count("event: end") == 1
    assert count(tmp_path, "step_two", "started") == 1  # the new version never resumed it
