"""The HTTP API on durable runs: the same contract as in-process runs (SQLite, PostgreSQL)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools
from support.durable_harness import Backend, durable_server, held_server


def test_a_message_runs_durably_and_streams_every_event_once(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, memory, list_conversations=True) as api:
        run_id = api.send("c1", "count")
        stream = api.stream(run_id)
        assert stream.end == {"run_id": run_id, "status": "succeeded"}
        assert [int(i or -1) for i in stream.ids] == list(range(len(stream.events)))
        assert stream.events[-1]["type"] == "final"
        resumed = api.stream(run_id, last_event_id=3)
        assert resumed.events == stream.events[4:]
        run = api.http.get(f"/v1/runs/{run_id}").json()
        assert run["status"] == "succeeded" and run["result"]["final_result"] == 4
        conversation = api.http.get("/v1/conversations/c1").json()
        assert [r["run_id"] for r in conversation["runs"]] == [run_id]
        listed = api.http.get("/v1/conversations").json()["conversations"]
        assert [(c["conversation_id"], c["first_question"], c["runs"]) for c in listed] == [
            ("c1", "count", 1)]
    memory.close()


def test_abort_reaches_the_worker_running_the_run(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    counting.hold = threading.Event()  # step_two never returns by itself
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, memory) as api:
        run_id = counting.send_held(api, "c1", "count")
        response = api.http.post(f"/v1/runs/{run_id}/abort", json={})
        assert response.status_code == 202
        stream = api.stream(run_id)
        assert stream.end is not None and stream.end["status"] == "aborted"
        assert stream.events[-1]["reason"] == "aborted"
        assert counting.count("step_two", "finished") == 0  # the abort did not wait for it
        assert api.http.post(f"/v1/runs/{run_id}/abort", json={}).status_code == 409
    counting.hold.set()
    memory.close()


def test_a_new_message_supersedes_the_running_one_and_runs_after_it(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with held_server(backend, counting, tmp_path, supersede_grace_s=0.2) as api:
        first = counting.send_held(api, "c1", "count")
        second = api.http.post("/v1/conversations/c1/messages", json={"content": "again"}).json()
        assert second["supersedes"] == first
        old = api.stream(first)  # a tool is no safe point: the grace ends it
        counting.hold.set()  # the new run's step_two goes through
        new = api.stream(second["run_id"])
        assert old.end is not None and old.end["status"] == "aborted"
        assert old.events[-1]["reason"] == "superseded"
        assert old.events[-1]["superseded_by"] == second["run_id"]
        assert new.end is not None and new.end["status"] == "succeeded"
        assert new.events[0]["ts"] >= old.events[-1]["ts"]


def test_a_queued_message_superseded_by_another_never_runs(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with held_server(backend, counting, tmp_path, supersede_grace_s=0.2) as api:
        first = counting.send_held(api, "c1", "one")
        second = api.send("c1", "two")  # waits for the first
        third = api.send("c1", "three")  # supersedes the second while it waits
        counting.hold.set()
        waited = api.stream(second)
        assert waited.end is not None and waited.end["status"] == "aborted"
        assert [e["type"] for e in waited.events] == ["final"]
        assert waited.events[0]["reason"] == "superseded"
        assert api.wait_for(third)["status"] == "succeeded"
        assert api.wait_for(first)["status"] == "aborted"


def test_messages_posted_at_once_are_all_kept_in_the_conversation_in_order(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    memory = SQLiteMemory(tmp_path / "conversations.db")
    questions = [f"message {n}" for n in range(12)]
    with durable_server(backend, lambda: counting.brain(memory=memory), memory,
                        supersede_grace_s=0.2) as api:
        with ThreadPoolExecutor(len(questions)) as pool:
            run_ids = list(pool.map(lambda q: api.send("burst", q), questions))
        runs = [api.wait_for(run_id) for run_id in run_ids]
        messages = api.http.get("/v1/conversations/burst").json()["messages"]
    memory.close()

    by_id = {run["run_id"]: run for run in runs}
    accepted = [next(run for run in runs if run["supersedes"] is None)]
    while accepted[-1]["superseded_by"] is not None:  # each message replaced the one before
        accepted.append(by_id[accepted[-1]["superseded_by"]])
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert sorted(users) == sorted(questions)  # every message is kept
    assert users == [run["question"] for run in accepted]  # in the order the server took them
    assert all(run["reason"] == "superseded" for run in runs if run["status"] == "aborted")


def test_the_live_run_gauges_go_down_when_runs_end_and_the_record_names_its_worker(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    # /v1/health's active_runs is what dcbrain_runs_active reports (server/metrics.py).
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, memory) as api:
        run_ids = [api.send(f"c{i}", "count") for i in range(3)]
        during = api.http.get("/v1/health").json()["active_runs"]
        ends = [api.stream(run_id).end for run_id in run_ids]
        deadline = time.monotonic() + 30
        while api.http.get("/v1/health").json()["active_runs"] != 0:
            assert time.monotonic() < deadline, "active_runs never went down to 0"
            time.sleep(0.05)
        run = api.http.get(f"/v1/runs/{run_ids[0]}").json()
        executor_id = api.engine.executor_id
    memory.close()
    assert during == 3 and [end["status"] for end in ends] == ["succeeded"] * 3
    assert run["executor_id"] == executor_id and run["stranded_version"] is None
