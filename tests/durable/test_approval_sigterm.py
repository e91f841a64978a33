"""SIGTERM while a run waits for a person: the server drains without waiting for the
decision and without ending the run; after a restart the run still waits, with nothing
lost, and finishes once approved."""

from __future__ import annotations

import signal
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


def test_sigterm_during_an_approval_wait_leaves_the_run_waiting_with_nothing_lost(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.0, approval=("step_two",))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(config), "--port", str(port), "--drain-timeout", "600"]
    log = tmp_path / "serve.log"
    first = start(args, log)
    try:
        wait_healthy(first, base_url, log)
        sent = httpx.post(f"{base_url}/v1/conversations/c1/messages", json={"content": "go"})
        run_id = sent.json()["run_id"]
        wait_until(lambda: run_of(base_url, run_id)["status"] == "waiting", what="waiting")
        first.send_signal(signal.SIGTERM)
        # it drains without waiting the 600 s for a decision nobody has taken
        # (uvicorn re-raises the signal it caught)
        assert first.wait(timeout=120) in (0, -signal.SIGTERM), log.read_text()
    finally:
        stop(first)
    assert [count(tmp_path, name, "started") for name in TOOLS] == [1, 0, 0]
    second = start(args, log)
    try:
        wait_healthy(second, base_url, log)
        waiting = run_of(base_url, run_id)
        assert waiting["status"] == "waiting", waiting  # not interrupted, not lost
        [request] = waiting["approvals"]
        assert (request["tool"], request["decision"]) == ("step_two", None)
        decided = httpx.post(f"{base_url}/v1/runs/{run_id}/approvals/{request['call_id']}",
                             json={"approved": True, "args_hash": request["args_hash"]})
        assert decided.status_code == 200, decided.text
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
    assert '"status":"interrupted"' not in stream
