"""Durable runs: a client that follows a run to ``final`` reads the run as ``final`` told it,
on the node that executed it and on an API node that did not (SQLite, PostgreSQL)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from dcbrain import ScriptedLLM, SQLiteMemory
from dcbrain.brain import DCBrain
from support.cluster import api_command, worker_command
from support.durable_harness import Backend, durable_server
from support.durable_processes import (
    answer_every_run,
    free_port,
    start,
    stop,
    wait_healthy,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer
from support.server_app import Api, sse_messages

RUNS = 200
CLIENTS = 6


def _answering_brain() -> DCBrain:
    return DCBrain(default_llm=ScriptedLLM(["hello"] * 1000))


def follow_then_read(http: httpx.Client, conversation_id: str) -> tuple[dict[str, Any],
                                                                        dict[str, Any]]:
    """Send a message, follow its stream to ``final``, read the run at once."""
    response = http.post(f"/v1/conversations/{conversation_id}/messages",
                         json={"content": "hi"})
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    events: list[dict[str, Any]] = []
    with http.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        for message in sse_messages(stream):
            events.append(message.data)
            if message.data.get("type") == "final":
                break  # not waiting for the stream's ``end``
    assert events and events[-1]["type"] == "final", events
    run: dict[str, Any] = http.get(f"/v1/runs/{run_id}").json()
    return {**events[-1], "event_count": len(events)}, run


def assert_agree(seen: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for final, run in seen:
        assert run["status"] == final["status"] == "succeeded", run
        assert run["reason"] == final["reason"]
        assert run["result"] is not None
        assert run["result"]["final_result"] == final["final_result"]
        assert run["event_count"] == final["event_count"], (run, final)


def test_the_record_agrees_with_final_at_once_under_load(backend: Backend,
                                                         tmp_path: Path) -> None:
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, _answering_brain, memory) as api, \
            ThreadPoolExecutor(CLIENTS) as clients:
        assert isinstance(api, Api)
        seen = list(clients.map(lambda i: follow_then_read(api.http, f"c{i}"), range(RUNS)))
    memory.close()
    assert_agree(seen)


def test_an_api_node_reads_a_workers_run_as_its_final_told(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.0)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = {name: tmp_path / f"{name}.log" for name in ("w1", "api")}
    try:
        processes["w1"] = start(worker_command(config=str(config), db=postgres_url,
                                               executor_id="w1"), logs["w1"])
        wait_until(lambda: "ready" in logs["w1"].read_text(), what="w1 ready")
        processes["api"] = start(api_command(config=str(config), db=postgres_url,
                                             host="127.0.0.1", port=port), logs["api"])
        wait_healthy(processes["api"], base_url, logs["api"])
        with httpx.Client(base_url=base_url, timeout=60) as http, \
                ThreadPoolExecutor(CLIENTS) as clients:
            seen = list(clients.map(lambda i: follow_then_read(http, f"c{i}"), range(24)))
    finally:
        for process in processes.values():
            stop(process)
    assert_agree(seen)
