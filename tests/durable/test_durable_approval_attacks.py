"""Approvals of durable runs attacked (SQLite and PostgreSQL): racing decisions have one
winner, a decision from another origin is refused, a cancelled or pruned run refuses
decisions with a 4xx, and prune leaves a waiting run alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.durable_brains import CountingTools
from support.durable_harness import Backend, age_runs, waiting_run


def url(run_id: str, request: dict[str, Any]) -> str:
    return f"/v1/runs/{run_id}/approvals/{request['call_id']}"


def test_racing_decisions_on_a_durable_run_have_exactly_one_winner(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, run):
        [request] = run["approvals"]
        cross = api.http.post(url(run_id, request), json={"approved": True},
                              headers={"Origin": "http://evil.example"})
        assert cross.status_code == 403 and cross.json()["error"] == "cross_origin"
        answers = api.race_decisions(run_id, request["call_id"], 10)
        stream = api.stream(run_id)
        assert stream.end is not None
        types = [event["type"] for event in stream.events]
        final = api.http.get(f"/v1/runs/{run_id}").json()
    assert sorted(r.status_code for r in answers) == [200] + [409] * 9
    [winner] = [r.json() for r in answers if r.status_code == 200]
    assert final["approvals"][0]["decision"]["approved"] is winner["approved"]
    assert types.count("approval_decided") == 1 and types.count("run_resumed") == 1
    assert counting.count("step_two", "started") == (1 if winner["approved"] else 0)


def test_prune_keeps_a_waiting_run_and_a_cancelled_then_pruned_one_refuses_decisions(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, run):
        [request] = run["approvals"]
        age_runs(backend, [run_id], 2.0)  # the waiting run is older than the prune's horizon
        kept = api.http.post("/v1/runs/prune", json={"older_than": "1s"})
        assert kept.status_code == 200 and kept.json()["pruned"] == 0
        assert api.http.get(f"/v1/runs/{run_id}").json()["status"] == "waiting"
        assert api.http.post(f"/v1/runs/{run_id}/cancel", json={}).status_code == 202
        assert api.stream(run_id).end is not None
        late = api.http.post(url(run_id, request), json={"approved": True})
        assert late.status_code == 409 and "has ended" in late.json()["detail"]
        age_runs(backend, [run_id], 2.0)  # and so is the cancelled one
        assert api.http.post("/v1/runs/prune", json={"older_than": "1s"}).json()["pruned"] == 1
        gone = api.http.post(url(run_id, request), json={"approved": True})
        assert gone.status_code == 404
        assert api.http.get("/v1/ready").status_code == 200
    assert counting.count("step_two", "started") == 0
