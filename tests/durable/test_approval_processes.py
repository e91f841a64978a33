"""Human approval with real processes: a waiting run survives a SIGKILLed server and
dead workers; the decision is posted to the API, the run finishes on whichever worker
takes it, and no call that finished ran twice."""

from __future__ import annotations

from collections.abc import Callable

from support.durable_processes import Cluster, assert_approved_once, planner_requests

TOOLS = ("step_one", "step_two", "step_three")


def test_a_waiting_run_survives_a_killed_server_and_finishes_once_approved(
    cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=0.0, approval=("step_two",))
    nodes.serve()
    run_id = nodes.send()
    nodes.wait_status([run_id], "waiting")
    nodes.kill("serve")
    assert nodes.started(*TOOLS) == [1, 0, 0]
    nodes.serve()
    assert nodes.status(run_id) == "waiting"  # not interrupted, not lost
    run, stream = nodes.approve_and_finish(run_id, "step_two")
    nodes.close()
    assert_approved_once(nodes, run, stream)


def test_an_approval_posted_to_the_api_node_resumes_on_a_worker_and_dead_workers_change_nothing(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    nodes = cluster(delay_s=0.0, approval=("step_two",))
    nodes.worker("w1", postgres_url, "--concurrency", "4")
    nodes.worker("w2", postgres_url, "--concurrency", "4")
    nodes.api(postgres_url)
    run_ids = [nodes.send(f"c{i}") for i in range(3)]
    nodes.wait_status(run_ids, "waiting")
    for name in ("w1", "w2"):  # a waiting run is on no worker: killing them loses nothing
        nodes.kill(name)
    nodes.worker("w3", postgres_url, "--concurrency", "4")
    assert all(nodes.status(r) == "waiting" for r in run_ids)
    for run_id in run_ids:
        nodes.approve(run_id, "step_two")
    nodes.wait_status(run_ids, "succeeded", timeout_s=120)
    runs = [nodes.run(r) for r in run_ids]
    nodes.close()
    assert all(r["result"]["final_result"] == 4 for r in runs)
    assert nodes.started(*TOOLS) == [3, 3, 3]
    assert planner_requests(nodes.llm) == 3
