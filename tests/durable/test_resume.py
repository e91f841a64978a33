"""Crash and resume with real processes: SIGKILL mid-run, the run finishes by itself."""

from __future__ import annotations

import json
import signal
from pathlib import Path

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


def _wait_until_stored(base_url: str, run_id: str, call: str) -> None:
    """Read the run's stream (stored events only) up to the start of ``call``."""
    url = f"{base_url}/v1/runs/{run_id}/events"
    with httpx.stream("GET", url, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[len("data: "):])
                if event.get("type") == "call_started" and event.get("name") == call:
                    return
    raise AssertionError(f"the run ended before {call} started")


def test_serve_killed_during_a_slow_tool_resumes_the_run_on_restart(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=3.0)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(config), "--port", str(port)]
    log = tmp_path / "serve.log"
    first = start(args, log)
    try:
        wait_healthy(first, base_url, log)
        sent = httpx.post(f"{base_url}/v1/conversations/c1/messages", json={"content": "go"})
        run_id = sent.json()["run_id"]
        wait_until(lambda: count(tmp_path, "step_two", "started") == 1, what="step_two running")
        _wait_until_stored(base_url, run_id, "step_two")  # what a crash cannot take back
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    assert count(tmp_path, "step_two", "finished") == 0  # killed in the middle of it
    assert planner_requests(fake_openai) == 1
    answered_before_the_kill = len(fake_openai.requests)
    second = start(args, log)
    try:
        wait_healthy(second, base_url, log)

        def ended() -> bool:
            return httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"] != "running"

        wait_until(ended, what="the resumed run's end")
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        events = httpx.get(f"{base_url}/v1/runs/{run_id}/events", timeout=30).text
        stored = [json.loads(line[len("data: "):]) for line in events.splitlines()
                  if line.startswith("data: ")]
        stored = [event for event in stored if "seq" in event]
    finally:
        stop(second)
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 4), run
    assert events.count("event: end") == 1
    # Finished calls ran once (the plan too); the call cut off by the kill ran again.
    assert [count(tmp_path, name, "started") for name in ("step_one", "step_two", "step_three")
            ] == [1, 2, 1]
    assert count(tmp_path, "step_three", "finished") == 1
    assert planner_requests(fake_openai) == 1
    # The story is told once, in order: the first execution, the call the kill cut off
    # closed as interrupted, the resume, then the second execution.
    assert [e["seq"] for e in stored] == list(range(len(stored)))
    types = [e["type"] for e in stored]
    assert types.count("run_resumed") == 1 and types.count("final") == 1
    resumed_at = types.index("run_resumed")
    assert stored[resumed_at]["execution"] == 2
    cut_off = [e for e in stored[:resumed_at] if e["type"] == "call_finished"
               and e["name"] == "step_two"]
    assert [e["status"] for e in cut_off] == ["interrupted"]
    assert stored[resumed_at + 1]["type"] == "run_started"
    # Usage and time are the whole run's: every LLM request answered, both executions.
    assert run["result"]["usage"]["requests"] == len(fake_openai.requests) > \
        answered_before_the_kill
    assert run["result"]["duration_s"] >= stored[resumed_at]["earlier_duration_s"] > 0
