"""Runs and their events live in SQLite: a restarted server still shows them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dcbrain import DCBrain, ScriptedLLM, SQLiteMemory, SQLiteRunStore
from support.brain_scripts import plan, verdict
from support.server_app import (
    PATIENCE_S,
    Api,
    BrainScripts,
    ServeFn,
    replanning_brain,
    stuck_brain,
)

SERVER_PROCESS = Path(__file__).parent.parent / "support" / "server_process.py"


def test_a_second_server_on_the_same_file_shows_runs_events_and_messages(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    brains.then(replanning_brain)
    with serve() as api:
        run_id = api.send("trip", "What is 2+3+1?")
        before = api.stream(run_id)
        run_before = api.http.get(f"/v1/runs/{run_id}").json()

    reopened = SQLiteMemory(tmp_path / "server.db")
    try:
        with serve(store=reopened, list_conversations=True) as api:
            after = api.stream(run_id)
            resumed = api.stream(run_id, last_event_id=9)
            run_after = api.http.get(f"/v1/runs/{run_id}").json()
            conversation = api.http.get("/v1/conversations/trip").json()
            listing = api.http.get("/v1/conversations").json()["conversations"]
    finally:
        reopened.close()

    assert after.events == before.events and after.end == before.end
    assert resumed.events == before.events[10:]
    assert {k: v for k, v in run_after.items() if k != "updated_at"} == {
        k: v for k, v in run_before.items() if k != "updated_at"}
    assert [m["content"] for m in conversation["messages"]] == ["What is 2+3+1?", "6"]
    assert conversation["messages"][1]["run_id"] == run_id  # the mapping is stored too
    assert [c["conversation_id"] for c in listing] == ["trip"]


def test_runs_go_to_a_run_store_and_conversations_come_from_the_memory_given(
    serve: ServeFn, brains: BrainScripts, memory: SQLiteMemory, tmp_path: Path
) -> None:
    brains.then(replanning_brain)
    with SQLiteRunStore(tmp_path / "runs.db") as runs:
        with serve(store=runs, memory=memory) as api:
            run_id = api.send("trip", "What is 2+3+1?")
            streamed = api.stream(run_id)
            conversation = api.http.get("/v1/conversations/trip").json()
        stored = runs.get_run(run_id)
        assert stored is not None and stored.status == "succeeded"
        assert [r.event for r in runs.run_events(run_id)][: len(streamed.events)] == \
            streamed.events
    assert memory.list_runs() == []  # the memory's own file holds no run
    assert [m["content"] for m in conversation["messages"]] == ["What is 2+3+1?", "6"]
    assert [r["run_id"] for r in conversation["runs"]] == [run_id]


def test_the_next_run_of_a_conversation_sees_the_failed_attempts_of_earlier_ones(
    serve: ServeFn, brains: BrainScripts
) -> None:
    planner = ScriptedLLM([plan("return 2 + 2"), verdict(True)])
    brains.then(lambda memory: DCBrain(
        default_llm=ScriptedLLM([plan("return 2 * 2"), verdict(False, "add them")]),
        memory=memory, max_iterations=1))
    brains.then(lambda memory: DCBrain(default_llm=planner, memory=memory))
    with serve() as api:
        assert api.wait_for(api.send("c1", "2 plus 2?"))["status"] == "failed"
        assert api.wait_for(api.send("c1", "2 plus 2?"))["status"] == "succeeded"
    system = planner.calls[0][0]["content"]
    assert "```tf_plan\nreturn 2 * 2\n```" in system
    assert "The validator's suggestion: add them" in system


def test_a_graceful_shutdown_ends_live_runs_as_interrupted(
    serve: ServeFn, brains: BrainScripts, tmp_path: Path
) -> None:
    brains.then(stuck_brain)
    with serve() as api:
        run_id = api.send("c1", "never answered")
        api.stream(run_id, until=lambda e: e["type"] == "call_started")
    with serve() as api:
        run = api.http.get(f"/v1/runs/{run_id}").json()
        stream = api.stream(run_id)
    assert (run["status"], run["reason"]) == ("interrupted", "server_shutdown")
    assert stream.events[-1]["type"] == "final"
    assert stream.events[-1]["status"] == "interrupted"
    assert stream.end == {"run_id": run_id, "status": "interrupted"}


def test_a_run_in_flight_when_the_server_died_is_marked_interrupted_at_startup(
    serve: ServeFn, tmp_path: Path
) -> None:
    db, port_file = tmp_path / "server.db", tmp_path / "port"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    process = subprocess.Popen([sys.executable, str(SERVER_PROCESS), str(db), str(port_file)],
                               env=env)
    try:
        deadline = time.monotonic() + PATIENCE_S
        while not port_file.exists():
            assert process.poll() is None, "the server process exited"
            assert time.monotonic() < deadline, "the server process did not start"
            time.sleep(0.05)
        dead = Api(f"http://127.0.0.1:{port_file.read_text()}")
        run_id = dead.send("c1", "a question the server will not live to answer")
        seen = dead.stream(run_id, until=lambda e: e["type"] == "call_started").events
        dead.http.close()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(PATIENCE_S)

    with serve() as api:
        run = api.http.get(f"/v1/runs/{run_id}").json()
        stream = api.stream(run_id)
    assert (run["status"], run["reason"]) == ("interrupted", "server_restart")
    assert stream.events[: len(seen)] == seen
    final = stream.events[-1]
    assert (final["type"], final["status"], final["seq"]) == (
        "final", "interrupted", len(stream.events) - 1)
    assert stream.end == {"run_id": run_id, "status": "interrupted"}
