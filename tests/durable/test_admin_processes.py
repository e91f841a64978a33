"""Operating real ``dcbrain serve`` processes: resuming a stopped workflow, retention."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx

from dcbrain.memory import SQLiteRunStore
from support.cli_runner import cli_runner
from support.durable_processes import (
    answer_every_run,
    count,
    free_port,
    start,
    stop,
    wait_healthy,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer


def _wait_until_stored(base_url: str, run_id: str, call: str) -> None:
    with httpx.stream("GET", f"{base_url}/v1/runs/{run_id}/events", timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and '"call_started"' in line:
                event = json.loads(line[len("data: "):])
                if event.get("name") == call:
                    return
    raise AssertionError(f"the run ended before {call} started")


def _cancel_workflow(database: Path, run_id: str) -> None:
    """Cancel the run's DBOS workflow while no server runs (``dbos workflow cancel``)."""
    from dcbrain.durable import DurableEngine
    from dcbrain.durable.setup import open_store

    runs = SQLiteRunStore(database)
    url, store = open_store(None, runs)
    engine = DurableEngine(url, store, app_version="operator")
    engine.start()
    try:
        engine.cancel(run_id)
        assert engine.workflow_statuses([run_id]) == {run_id: "CANCELLED"}
    finally:
        engine.stop()
        runs.close()


def test_a_crashed_run_whose_workflow_was_cancelled_is_resumed_and_finishes(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=2.0)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(config), "--port", str(port)]
    log = tmp_path / "serve.log"
    first = start(args, log)
    try:
        wait_healthy(first, base_url, log)
        run_id = httpx.post(f"{base_url}/v1/conversations/c1/messages",
                            json={"content": "go"}).json()["run_id"]
        wait_until(lambda: count(tmp_path, "step_two", "started") == 1, what="step_two running")
        _wait_until_stored(base_url, run_id, "step_two")
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    _cancel_workflow(tmp_path / "brain.db", run_id)
    run_cli = cli_runner(tmp_path)
    target = ["--config", str(config)]  # the database: the server need not be up to take it
    second = start(args, log)
    try:
        wait_healthy(second, base_url, log)
        # Not resumed by the restart: the workflow was cancelled, the record says running.
        assert httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"] == "running"
        resumed = run_cli("runs", "resume", run_id, *target)
        assert resumed.returncode == 0, resumed.stderr

        def ended() -> bool:
            return httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"] != "running"

        wait_until(ended, what="the resumed run's end")
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        again = run_cli("runs", "resume", run_id, *target)
    finally:
        stop(second)
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 4), run
    # The journal replayed what finished before the crash; the call cut off ran again.
    assert [count(tmp_path, name, "started") for name in ("step_one", "step_two", "step_three")
            ] == [1, 2, 1]
    assert again.returncode == 1 and "has ended (succeeded)" in again.stderr


def test_serve_prunes_finished_runs_as_the_retention_table_says(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.0)
    with config.open("a") as out:
        out.write("[retention]\ndays = 30\ncheck_every_minutes = 60\n")
    runs = SQLiteRunStore(tmp_path / "brain.db")
    old = time.time() - 40 * 86400
    for run_id, status in (("1" * 32, "succeeded"), ("2" * 32, "running"),
                           ("3" * 32, "succeeded")):
        runs.save_run(run_id, "c1", status, {"question": "q"})
        runs.append_run_event(run_id, 0, {"seq": 0, "type": "final"})
    import sqlite3

    with sqlite3.connect(tmp_path / "brain.db") as conn:
        conn.execute("UPDATE runs SET updated_at = ? WHERE run_id IN (?, ?)",
                     (old, "1" * 32, "2" * 32))
    runs.close()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    server = start(["serve", "--config", str(config), "--port", str(port)], log)
    try:
        wait_healthy(server, base_url, log)
        wait_until(lambda: httpx.get(f"{base_url}/v1/runs/{'1' * 32}").status_code == 404,
                   what="the old run's pruning")
        kept = [httpx.get(f"{base_url}/v1/runs/{run_id}").status_code
                for run_id in ("2" * 32, "3" * 32)]
    finally:
        stop(server)
    assert kept == [200, 200]  # a live run, however old, and a recent one stay
