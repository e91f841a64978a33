"""Crash and resume with real processes: SIGKILL mid-run, the run finishes by itself."""

from __future__ import annotations

from collections.abc import Callable

from support.durable_processes import Cluster, count, planner_requests, wait_until


def test_serve_killed_during_a_slow_tool_resumes_the_run_on_restart(
    cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=3.0)
    nodes.serve()
    run_id = nodes.send()
    nodes.kill_during(run_id, "step_two")
    assert count(nodes.directory, "step_two", "finished") == 0  # killed in the middle of it
    assert planner_requests(nodes.llm) == 1
    answered_before_the_kill = len(nodes.llm.requests)
    nodes.serve()
    wait_until(lambda: nodes.status(run_id) != "running", what="the resumed run's end")
    run = nodes.run(run_id)
    events = nodes.stream(run_id)
    stored = nodes.stored_events(run_id)
    nodes.close()
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 4), run
    assert events.count("event: end") == 1
    # Finished calls ran once (the plan too); the call cut off by the kill ran again.
    assert nodes.started("step_one", "step_two", "step_three") == [1, 2, 1]
    assert count(nodes.directory, "step_three", "finished") == 1
    assert planner_requests(nodes.llm) == 1
    # The story is told once, in order: the first execution, the call the kill cut off
    # closed as interrupted, the resume, then the second execution.
    assert [e["seq"] for e in stored] == list(range(len(stored)))
    types = [e["type"] for e in stored]
    assert types.count("run_resumed") == 1 and types.count("final") == 1
    resumed_at = types.index("run_resumed")
    assert stored[resumed_at]["execution"] == 2
    cut_off = [e for e in stored[:resumed_at] if e["type"] == "call_finished"
               and e["name"] == "step_two"]
    assert [e["status"] for e in cut_off] == ["interrupted"]
    assert stored[resumed_at + 1]["type"] == "run_started"
    # Usage and time are the whole run's: every LLM request answered, both executions.
    assert run["result"]["usage"]["requests"] == len(nodes.llm.requests) > \
        answered_before_the_kill
    assert run["result"]["duration_s"] >= stored[resumed_at]["earlier_duration_s"] > 0
