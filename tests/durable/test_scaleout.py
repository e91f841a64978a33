"""Two workers and an API node on one PostgreSQL: a worker dies mid-run, every run succeeds."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

from support.cluster import api_command, worker_command
from support.durable_processes import (
    Cluster,
    count,
    marks,
    planner_requests,
    wait_for_line,
    wait_healthy,
    wait_until,
)

RUNS = 6
TOOLS = ("step_one", "step_two", "step_three")


def _running_on(postgres_url: str, executor_id: str) -> int:
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT count(*) FROM dcbrain_runs WHERE status = 'running' "
                           "AND data->>'executor_id' = %s", (executor_id,)).fetchone()
    return int(row[0]) if row else 0


def finished_again(directory: Path, name: str, killed: int, killed_at: float) -> int:
    """Calls of ``name`` that finished twice; each first finished in process ``killed``
    shortly before it was killed (a loaded machine may take seconds to write a row)."""
    finishes: dict[str, list[tuple[float, int]]] = {}
    for when, pid, key in marks(directory, name, "finished"):
        finishes.setdefault(key, []).append((when, pid))
    again = [sorted(found) for found in finishes.values() if len(found) > 1]
    for (when, pid), *_ in again:
        assert pid == killed and killed_at - 5.0 < when <= killed_at, again
    assert all(len(found) == 2 for found in again), again
    return len(again)


def test_a_killed_workers_runs_finish_on_the_other_worker(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    nodes = cluster(delay_s=1.0)
    tmp_path = nodes.directory
    for name in ("w1", "w2"):
        nodes.start(name, worker_command(config=str(nodes.config), db=postgres_url,
                                         executor_id=name))
    for name in ("w1", "w2"):
        wait_for_line(nodes.log(name), "ready", nodes.processes[name])
    api = nodes.start("api", api_command(config=str(nodes.config), db=postgres_url,
                                         host="127.0.0.1", port=nodes.port))
    wait_healthy(api, nodes.base_url, nodes.log("api"))
    run_ids = [nodes.send(f"c{i}") for i in range(RUNS)]
    killed = nodes.processes["w1"].pid
    wait_until(lambda: _running_on(postgres_url, "w1") > 0
               and count(tmp_path, "step_two", "started", killed) > 0,
               what="w1 in the middle of a run")
    killed_at = time.time()
    nodes.kill("w1")
    cut_off = sum(count(tmp_path, name, "started", killed)
                  - count(tmp_path, name, "finished", killed) for name in TOOLS)
    runs = nodes.wait_ended(run_ids)
    streams = [nodes.stream(run_id) for run_id in run_ids]
    # The workers' memory is the database's: the API node shows what either wrote.
    conversations = [httpx.get(f"{nodes.base_url}/v1/conversations/c{i}").json()
                     for i in range(RUNS)]
    nodes.close()
    assert [r["status"] for r in runs] == ["succeeded"] * RUNS, runs
    assert all(r["result"]["final_result"] == 4 for r in runs)
    assert all(stream.count("event: end") == 1 for stream in streams)
    assert [[m["role"] for m in c["messages"]] for c in conversations] == [
        ["user", "assistant"]] * RUNS  # committed once each, also by the resumed runs
    assert "back on the queue" in nodes.log("w2").read_text()  # w2 took over w1's runs
    # Every call finished once, but for one w1 finished in the instant before the kill,
    # before its journal row was written (calls run at least once); the calls the kill cut
    # off, and only those, started a second time.
    again = {name: finished_again(tmp_path, name, killed, killed_at) for name in TOOLS}
    assert [count(tmp_path, name, "finished") - again[name] for name in TOOLS] == [RUNS] * 3
    assert sum(count(tmp_path, name, "started") - again[name] for name in TOOLS) == \
        3 * RUNS + cut_off
    assert count(tmp_path, "step_one", "finished", killed) > 0  # w1 had finished calls
    assert planner_requests(nodes.llm) == RUNS  # w1's plans were not asked for again
