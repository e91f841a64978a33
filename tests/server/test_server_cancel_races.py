"""Cancel and prune race a run: a cancel during a tool call ends the run at the next safe
point (the call in flight finishes and is recorded, no later call starts), and prune never
deletes a run that is running or waiting, however old its record looks."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from dcbrain import SQLiteMemory
from support.server_app import BrainScripts, ServeFn


def test_a_cancel_during_a_call_ends_the_run_at_the_next_safe_point(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    with serve() as api:
        run_id = api.send_held("c1", "hold", gate)
        cancelled = api.http.post(f"/v1/runs/{run_id}/cancel", json={})
        assert cancelled.status_code == 202
        gate.opened.set()
        done = api.wait_for(run_id)
        events: list[dict[str, Any]] = api.stream(run_id).events
        again = api.http.post(f"/v1/runs/{run_id}/cancel", json={})
    assert done["status"] == "aborted"
    started = [e["name"] for e in events if e["type"] == "call_started" and e["kind"] != "llm"]
    finished = [e for e in events if e["type"] == "call_finished" and e.get("name") == "hold"]
    assert started == ["hold"]  # summarize, after the safe point, never started
    assert len(finished) == 1
    assert events[-1]["type"] == "final" and events[-1]["status"] == "aborted"
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert again.status_code == 409


def test_prune_never_deletes_a_running_run_however_old_its_record(
    serve: ServeFn, brains: BrainScripts, memory: SQLiteMemory
) -> None:
    gate = brains.hold()
    with serve() as api:
        run_id = api.send_held("c1", "hold", gate)
        with sqlite3.connect(memory.path) as conn:  # as if it had started a year ago
            conn.execute("UPDATE runs SET created_at = ?, updated_at = ? WHERE run_id = ?",
                         (time.time() - 365 * 86400, time.time() - 365 * 86400, run_id))
        pruned = api.http.post("/v1/runs/prune", json={"older_than": "1d"}).json()["pruned"]
        gate.opened.set()
        done = api.wait_for(run_id)
    assert pruned == 0
    assert done["status"] == "succeeded"
    assert memory.run_events(run_id)
