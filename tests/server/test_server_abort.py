"""Aborting a run over HTTP."""

from __future__ import annotations

from support.server_app import BrainScripts, ServeFn, stuck_brain


def test_abort_stops_a_run_in_the_middle_of_an_llm_call(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.then(stuck_brain)
    with serve() as api:
        run_id = api.send("c1", "never answered")
        api.stream(run_id, until=lambda e: e["type"] == "call_started")
        response = api.http.post(f"/v1/runs/{run_id}/abort", json={})
        run = api.wait_for(run_id)
        events = api.stream(run_id).events
        again = api.http.post(f"/v1/runs/{run_id}/abort", json={})

    assert response.status_code == 202 and response.json() == {"run_id": run_id, "aborting": True}
    assert (run["status"], run["reason"]) == ("aborted", "aborted")
    states = [e["dest"] for e in events if e["type"] == "state_changed"]
    assert states[-1] == "aborted"
    assert events[-1]["type"] == "final" and events[-1]["status"] == "aborted"
    assert again.status_code == 409 and again.json()["error"] == "run_finished"


def test_abort_of_a_run_waiting_for_its_turn_ends_it_before_it_starts(
    serve: ServeFn, brains: BrainScripts
) -> None:
    gate = brains.hold()
    with serve(supersede_grace_s=60) as api:
        first = api.send_held("c1", "first", gate)
        second = api.send("c1", "second")
        aborted = api.http.post(f"/v1/runs/{second}/abort", json={})
        waiting = api.wait_for(second)
        gate.opened.set()
        api.wait_for(first)
    assert aborted.status_code == 202
    assert (waiting["status"], waiting["reason"]) == ("aborted", "aborted")
    assert brains.built == 1


def test_abort_of_an_unknown_run_is_404(serve: ServeFn) -> None:
    with serve() as api:
        response = api.http.post(f"/v1/runs/{'0' * 32}/abort", json={})
    assert response.status_code == 404 and response.json()["error"] == "not_found"
