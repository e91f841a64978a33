"""Human approval with real processes: a waiting run survives a SIGKILLed server and
dead workers; the decision is posted to the API, the run finishes on whichever worker
takes it, and no call that finished ran twice."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx

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


def run_of(base_url: str, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
    return run


def approve(base_url: str, run_id: str) -> None:
    [request] = run_of(base_url, run_id)["approvals"]
    assert (request["tool"], request["decision"]) == ("step_two", None)
    response = httpx.post(f"{base_url}/v1/runs/{run_id}/approvals/{request['call_id']}",
                          json={"approved": True, "args_hash": request["args_hash"]})
    assert response.status_code == 200, response.text


def test_a_waiting_run_survives_a_killed_server_and_finishes_once_approved(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.0, approval=("step_two",))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(config), "--port", str(port)]
    log = tmp_path / "serve.log"
    first = start(args, log)
    try:
        wait_healthy(first, base_url, log)
        sent = httpx.post(f"{base_url}/v1/conversations/c1/messages", json={"content": "go"})
        run_id = sent.json()["run_id"]
        wait_until(lambda: run_of(base_url, run_id)["status"] == "waiting", what="waiting")
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    assert [count(tmp_path, name, "started") for name in TOOLS] == [1, 0, 0]
    second = start(args, log)
    try:
        wait_healthy(second, base_url, log)
        assert run_of(base_url, run_id)["status"] == "waiting"  # not interrupted, not lost
        approve(base_url, run_id)
        wait_until(lambda: run_of(base_url, run_id)["status"] == "succeeded",
                   what="the approved run's end")
        run = run_of(base_url, run_id)
        stream = httpx.get(f"{base_url}/v1/runs/{run_id}/events", timeout=30).text
    finally:
        stop(second)
    assert run["result"]["final_result"] == 4
    assert [count(tmp_path, name, "started") for name in TOOLS] == [1, 1, 1]
    assert planner_requests(fake_openai) == 1
    assert stream.count('"type":"approval_requested"') == 1
    assert stream.count('"type":"approval_decided"') == 1 and stream.count("event: end") == 1


def test_an_approval_posted_to_the_api_node_resumes_on_a_worker_and_dead_workers_change_nothing(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.0, approval=("step_two",))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = {name: tmp_path / f"{name}.log" for name in ("w1", "w2", "w3", "api")}

    def worker(name: str) -> None:
        processes[name] = start(["worker", "--config", str(config), "--db", postgres_url,
                                 "--concurrency", "4", "--executor-id", name], logs[name])
        wait_until(lambda: "ready" in logs[name].read_text(), what=f"{name} ready")

    try:
        worker("w1")
        worker("w2")
        processes["api"] = start(["serve", "--config", str(config), "--db", postgres_url,
                                  "--role", "api", "--port", str(port)], logs["api"])
        wait_healthy(processes["api"], base_url, logs["api"])
        run_ids = [httpx.post(f"{base_url}/v1/conversations/c{i}/messages",
                              json={"content": "go"}).json()["run_id"] for i in range(3)]
        wait_until(lambda: all(run_of(base_url, r)["status"] == "waiting" for r in run_ids),
                   what="every run waiting")
        for name in ("w1", "w2"):  # a waiting run is on no worker: killing them loses nothing
            processes[name].send_signal(signal.SIGKILL)
            processes[name].wait()
        worker("w3")
        assert all(run_of(base_url, r)["status"] == "waiting" for r in run_ids)
        for run_id in run_ids:
            approve(base_url, run_id)
        wait_until(lambda: all(run_of(base_url, r)["status"] == "succeeded" for r in run_ids),
                   timeout_s=120, what="every approved run's end")
        runs = [run_of(base_url, r) for r in run_ids]
    finally:
        for process in processes.values():
            stop(process)
    assert all(r["result"]["final_result"] == 4 for r in runs)
    assert [count(tmp_path, name, "started") for name in TOOLS] == [3, 3, 3]
    assert planner_requests(fake_openai) == 3
