"""The admin API over HTTP: listing runs (filters, cursor), cancel, resume, prune."""

from __future__ import annotations

import sqlite3
import time

import pytest

from dcbrain import SQLiteMemory
from support.server_app import (
    BrainScripts,
    Gate,
    ServeFn,
    direct_brain,
    holding_brain,
    stuck_brain,
)


def _seed(memory: SQLiteMemory, run_id: str, cid: str, status: str) -> None:
    memory.save_run(run_id, cid, status, {"question": f"q {run_id}", "reason": None})


def _set_times(memory: SQLiteMemory, run_id: str, *, created_at: float | None = None,
               updated_at: float | None = None) -> None:
    with sqlite3.connect(memory.path) as conn:
        if created_at is not None:
            conn.execute("UPDATE runs SET created_at = ? WHERE run_id = ?", (created_at, run_id))
        if updated_at is not None:
            conn.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?", (updated_at, run_id))


def test_runs_are_listed_newest_first_filtered_by_status_and_conversation(
    serve: ServeFn, memory: SQLiteMemory
) -> None:
    seeded = [("a" * 31 + "1", "c1", "succeeded"), ("a" * 31 + "2", "c2", "failed"),
              ("a" * 31 + "3", "c1", "aborted"), ("a" * 31 + "4", "c2", "succeeded")]
    for n, (run_id, cid, status) in enumerate(seeded):
        _seed(memory, run_id, cid, status)
        _set_times(memory, run_id, created_at=1000.0 + n)
    with serve() as api:
        everything = api.http.get("/v1/runs").json()
        succeeded = api.http.get("/v1/runs", params={"status": "succeeded"}).json()
        of_c1 = api.http.get("/v1/runs", params={"conversation_id": "c1"}).json()
        both = api.http.get("/v1/runs", params={"status": "failed,aborted",
                                                "conversation_id": "c2"}).json()
    assert [r["run_id"] for r in everything["runs"]] == [s[0] for s in reversed(seeded)]
    assert everything["next_cursor"] is None
    assert {r["run_id"] for r in succeeded["runs"]} == {seeded[0][0], seeded[3][0]}
    assert [r["run_id"] for r in of_c1["runs"]] == [seeded[2][0], seeded[0][0]]
    assert [r["run_id"] for r in both["runs"]] == [seeded[1][0]]
    item = everything["runs"][0]
    assert set(item) >= {"run_id", "conversation_id", "status", "reason", "question",
                         "created_at", "updated_at", "event_count"}


def test_paging_with_the_cursor_never_repeats_or_skips_a_run(
    serve: ServeFn, memory: SQLiteMemory
) -> None:
    run_ids = [f"{n:032x}" for n in range(1, 24)]
    for n, run_id in enumerate(run_ids):
        _seed(memory, run_id, f"c{n % 3}", "succeeded")
        _set_times(memory, run_id, created_at=2000.0 + n // 4)  # four runs share each time
    expected = sorted(run_ids, key=lambda r: (2000.0 + run_ids.index(r) // 4, r), reverse=True)
    seen: list[str] = []
    with serve() as api:
        cursor = None
        while True:
            params = {"limit": "5", **({"cursor": cursor} if cursor else {})}
            page = api.http.get("/v1/runs", params=params).json()
            seen += [r["run_id"] for r in page["runs"]]
            if len(seen) == 5:  # a run added meanwhile is newer: it is not on later pages
                _seed(memory, "f" * 32, "c0", "succeeded")
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == expected


def test_the_listing_refuses_an_unknown_status_a_bad_limit_and_a_forged_cursor(
    serve: ServeFn,
) -> None:
    with serve() as api:
        status = api.http.get("/v1/runs", params={"status": "done"})
        limit = api.http.get("/v1/runs", params={"limit": "0"})
        text_limit = api.http.get("/v1/runs", params={"limit": "many"})
        cursor = api.http.get("/v1/runs", params={"cursor": "not-a-cursor"})
        cid = api.http.get("/v1/runs", params={"conversation_id": "../x"})
    assert status.status_code == 400 and status.json()["error"] == "invalid_query"
    assert "unknown status 'done'" in status.json()["detail"]
    assert "queued" in status.json()["detail"]  # says which statuses there are
    assert limit.status_code == text_limit.status_code == 400
    assert cursor.status_code == 400 and "cursor" in cursor.json()["detail"]
    assert cid.status_code == 400


def test_cancel_stops_a_running_run_and_a_queued_one(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = Gate()
    brains.then(stuck_brain).then(lambda memory: holding_brain(memory, gate))
    with serve(supersede_grace_s=60) as api:
        running = api.send("c1", "never answered")
        api.stream(running, until=lambda e: e["type"] == "call_started")
        cancelled = api.http.post(f"/v1/runs/{running}/cancel", json={})
        assert api.wait_for(running)["status"] == "aborted"
        holder = api.send_held("c2", "hold", gate)
        queued = api.send("c2", "waits for its turn")
        queued_cancel = api.http.post(f"/v1/runs/{queued}/cancel", json={})
        waiting = api.wait_for(queued)
        gate.opened.set()
        api.wait_for(holder)
        again = api.http.post(f"/v1/runs/{running}/cancel", json={})
        unknown = api.http.post(f"/v1/runs/{'0' * 32}/cancel", json={})
    assert cancelled.status_code == 202 and queued_cancel.status_code == 202
    assert (waiting["status"], waiting["reason"]) == ("aborted", "aborted")
    assert brains.built == 2  # the queued run never started
    assert again.status_code == 409 and unknown.status_code == 404


def test_resume_is_refused_by_a_server_whose_runs_are_not_durable(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(lambda memory: direct_brain(memory, "hello"))
    with serve() as api:
        run_id = api.send("c1", "hi")
        api.wait_for(run_id)
        refused = api.http.post(f"/v1/runs/{run_id}/resume", json={})
        unknown = api.http.post(f"/v1/runs/{'0' * 32}/resume", json={})
        bad = api.http.post(f"/v1/runs/{run_id}/resume", json={"any_version": "yes"})
        form = api.http.post(f"/v1/runs/{run_id}/resume", content=b"x",
                             headers={"content-type": "text/plain"})
    assert refused.status_code == 409 and refused.json()["error"] == "not_resumable"
    assert "not durable" in refused.json()["detail"]
    assert unknown.status_code == 404
    assert bad.status_code == 422
    assert form.status_code == 415  # a cross-site form cannot resume a run


def test_prune_deletes_finished_runs_older_than_asked(
    serve: ServeFn, memory: SQLiteMemory
) -> None:
    old = time.time() - 40 * 86400
    for run_id, status in (("1" * 32, "succeeded"), ("2" * 32, "failed"),
                           ("3" * 32, "aborted")):
        _seed(memory, run_id, "c1", status)
        memory.append_run_event(run_id, 0, {"seq": 0, "type": "final"})
        _set_times(memory, run_id, created_at=old, updated_at=old)
    _set_times(memory, "3" * 32, updated_at=time.time() - 29 * 86400)  # ended 29 days ago
    _seed(memory, "5" * 32, "c1", "succeeded")  # ended just now
    with serve() as api:
        bad = api.http.post("/v1/runs/prune", json={"older_than": "soon"})
        pruned = api.http.post("/v1/runs/prune", json={"older_than": "30d"})
        left = [r["run_id"] for r in api.http.get("/v1/runs").json()["runs"]]
    assert bad.status_code == 422 and "duration" in bad.json()["detail"]
    assert pruned.status_code == 200 and pruned.json()["pruned"] == 2
    assert sorted(left) == ["3" * 32, "5" * 32]
    assert memory.run_events("1" * 32) == [] and len(memory.run_events("3" * 32)) == 1


@pytest.mark.parametrize("path", ["/v1/runs", "/v1/runs/prune"])
def test_the_admin_api_needs_the_token(serve: ServeFn, path: str) -> None:
    with serve(token="secret") as api:
        api.http.headers.pop("Authorization")
        response = (api.http.get(path) if path == "/v1/runs"
                    else api.http.post(path, json={"older_than": "1d"}))
    assert response.status_code == 401
