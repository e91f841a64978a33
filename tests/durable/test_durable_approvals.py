"""Human approval of durable runs (SQLite and PostgreSQL): a waiting run holds no worker,
a decision posted to the API queues it again, and no finished call runs twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools
from support.durable_harness import Backend, durable_server, waiting_run


def decide(api: Any, run_id: str, call_id: str, **body: Any) -> Any:
    return api.http.post(f"/v1/runs/{run_id}/approvals/{call_id}", json=body)


def test_an_approval_posted_to_the_api_resumes_the_waiting_run_without_repeating_calls(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, run):
        listed = api.http.get("/v1/runs", params={"status": "waiting"}).json()["runs"]
        assert [r["run_id"] for r in listed] == [run_id]
        [pending] = run["approvals"]
        assert (pending["tool"], pending["arguments"], pending["decision"]) == (
            "step_two", {"x": 2}, None)
        assert (pending["line"], pending["kind"]) == (2, "tool")
        assert counting.count("step_one", "finished") == 1
        assert counting.count("step_two", "started") == 0
        assert decide(api, run_id, pending["call_id"], approved=True,
                      args_hash=pending["args_hash"]).status_code == 200
        stream = api.stream(run_id)
        assert stream.end == {"run_id": run_id, "status": "succeeded"}
        assert [int(i or -1) for i in stream.ids] == list(range(len(stream.events)))
        types = [event["type"] for event in stream.events]
        assert types.count("approval_requested") == 1 and types.count("approval_decided") == 1
        assert types.index("approval_requested") < types.index("run_resumed") < \
            types.index("approval_decided")
        resumed = next(e for e in stream.events if e["type"] == "run_resumed")
        assert resumed["reason"] == "the calls the run waited for were decided"
        final = api.http.get(f"/v1/runs/{run_id}").json()
        assert final["result"]["final_result"] == 4
        assert final["approvals"][0]["decision"]["approved"] is True
    assert [counting.count(name, "started") for name in ("step_one", "step_two", "step_three")
            ] == [1, 1, 1]


def test_decisions_that_cannot_be_taken_are_clear_4xx_and_a_denial_reaches_the_planner(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, run):
        [pending] = run["approvals"]
        call_id = pending["call_id"]
        assert decide(api, run_id, "ap-" + "0" * 20, approved=True).status_code == 404
        assert decide(api, "f" * 32, call_id, approved=True).status_code == 404
        assert decide(api, run_id, call_id, approved="yes").status_code == 400
        wrong = decide(api, run_id, call_id, approved=True, args_hash="0" * 64)
        assert wrong.status_code == 409 and "args_hash differs" in wrong.json()["detail"]
        denied = decide(api, run_id, call_id, approved=False, reason="not today")
        assert denied.status_code == 200 and denied.json()["approved"] is False
        again = decide(api, run_id, call_id, approved=True)
        assert again.status_code == 409 and "already decided" in again.json()["detail"]
        stream = api.stream(run_id)
        assert stream.end is not None
        failed = [e for e in stream.events if e["type"] == "plan_finished" and not e["ok"]]
        assert failed and failed[0]["error_kind"] == "TFApprovalDenied"
        assert "denied by the user: not today" in failed[0]["error"]
    assert counting.count("step_two", "started") == 0


def test_a_request_nobody_decides_in_time_is_denied(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    counting.approval = {"step_two"}
    counting.approval_timeout_s = 0.3
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, memory, approval_sweep_s=0.1) as api:
        run_id = api.send("c1", "count")
        stream = api.stream(run_id)
        assert stream.end is not None
        [decided] = [e for e in stream.events if e["type"] == "approval_decided"]
        assert (decided["approved"], decided["decided_by"], decided["reason"]) == (
            False, "timeout", "approval timed out")
    assert counting.count("step_two", "started") == 0
    memory.close()


def test_a_waiting_run_is_aborted_at_once_on_the_api_node(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, _):
        assert api.http.post(f"/v1/runs/{run_id}/abort", json={}).status_code == 202
        stream = api.stream(run_id)
        assert stream.end == {"run_id": run_id, "status": "aborted"}
    assert counting.count("step_two", "started") == 0


def test_a_continuation_runs_under_the_runs_version_not_the_deciding_nodes(
    postgres_url: str, counting: CountingTools
) -> None:
    import time

    from dcbrain.durable import DurableEngine, PostgresDurableStore
    from dcbrain.durable.approvals import decide as decide_call
    from support.durable_harness import running_engine, submit, wait_until_ended

    counting.approval = {"step_two"}
    store = PostgresDurableStore(postgres_url)
    backend = Backend("postgres", postgres_url, store)
    with running_engine(backend, counting.brain) as worker:
        run_id = submit(worker, store, "c1", "count")
        deadline = time.monotonic() + 30
        while (record := store.get_run(run_id)) is None or record.status != "waiting":
            assert time.monotonic() < deadline, record
            time.sleep(0.02)
        # an API node of another version (say, mid-upgrade) takes the decision
        api_node = DurableEngine(postgres_url, store, app_version="dcbrain-0-api-node")
        api_node.start()
        try:
            [pending] = record.data["approvals"]
            decide_call(store, api_node.enqueue, run_id, pending["call_id"], approved=True)
            ended = wait_until_ended(store, run_id)
            continuation = api_node.workflow_version(ended.data["workflow_id"])
        finally:
            api_node.stop()
    store.close()
    assert ended.status == "succeeded"
    assert continuation == worker.app_version
