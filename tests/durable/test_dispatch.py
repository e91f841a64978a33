"""How runs reach workers: spread over the live ones, handed back at once by a stopping
one, and nodes started before their database wait for it (real processes, PostgreSQL)."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

from dcbrain.durable.testing import PostgresCluster, fresh_database
from support.durable_processes import (
    Cluster,
    answer_every_run,
    count,
    free_port,
    start,
    stop,
    wait_for_line,
    wait_ready,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer

TOOLS = ("step_one", "step_two", "step_three")


def _executors(postgres_url: str, run_ids: list[str]) -> dict[str, str | None]:
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT run_id, data->>'executor_id' FROM dcbrain_runs "
                            "WHERE run_id = ANY(%s)", (run_ids,)).fetchall()
    return dict(rows)


def _statuses(base_url: str, run_ids: list[str]) -> list[str]:
    return [httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"] for run_id in run_ids]


def test_a_burst_of_runs_spreads_over_both_workers(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    # Each worker could take the whole burst (concurrency 16): it takes its share.
    nodes = cluster(delay_s=1.0)
    tmp_path = nodes.directory
    for name in ("w1", "w2"):
        nodes.worker(name, postgres_url, "--concurrency", "16")
    api = nodes.api(postgres_url)
    wait_ready(api, nodes.base_url, nodes.log("api"))
    run_ids = [nodes.send(f"c{i}") for i in range(12)]
    nodes.wait_status(run_ids, "succeeded", timeout_s=120)
    executors = _executors(postgres_url, run_ids)
    nodes.close()
    taken = Counter(executors.values())
    assert set(taken) == {"w1", "w2"} and min(taken.values()) >= 3, taken
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [12] * 3


def test_a_stopping_worker_hands_its_runs_to_a_live_one_at_once(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    # With --takeover-after 600 nobody is called dead in this test: w2 can only have the
    # run because w1 handed it back as it stopped.
    nodes = cluster(delay_s=10.0)  # a run lasts 30 s
    tmp_path = nodes.directory
    patient = ("--drain-timeout", "0", "--takeover-after", "600")
    nodes.worker("w1", postgres_url, *patient)
    api = nodes.api(postgres_url)
    wait_ready(api, nodes.base_url, nodes.log("api"))
    run_id = nodes.send()
    wait_until(lambda: count(tmp_path, "step_one", "started") > 0, what="w1 running it")
    nodes.worker("w2", postgres_url, *patient)
    nodes.processes["w1"].send_signal(signal.SIGTERM)
    assert nodes.processes["w1"].wait(60) == 0, nodes.log("w1").read_text()[-3000:]
    nodes.wait_status([run_id], "succeeded", timeout_s=90)
    executors = _executors(postgres_url, [run_id])
    nodes.close()
    logs = {name: nodes.log(name) for name in ("w1", "w2")}
    assert executors == {run_id: "w2"}
    assert "w1 stopping: 1 run(s) handed back to the queue" in logs["w1"].read_text()
    assert "is silent" not in logs["w2"].read_text()


def test_nodes_started_before_their_database_wait_for_it_and_say_so(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_cluster: PostgresCluster
) -> None:
    postgres_url = fresh_database(postgres_cluster.url)
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.1)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    logs = {name: tmp_path / f"{name}.log" for name in ("worker", "api", "impatient")}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    postgres_cluster.stop()
    try:
        processes["impatient"] = start(["worker", "--config", str(config), "--db",
                                        postgres_url, "--db-wait", "1"], logs["impatient"])
        processes["worker"] = start(["worker", "--config", str(config), "--db", postgres_url,
                                     "--db-wait", "120"], logs["worker"])
        processes["api"] = start(["serve", "--config", str(config), "--db", postgres_url,
                                  "--role", "api", "--port", str(port), "--db-wait", "120"],
                                 logs["api"])
        assert processes["impatient"].wait(60) == 2
        for name in ("worker", "api"):
            wait_for_line(logs[name], "waits for the database", processes[name])
        postgres_cluster.start()
        wait_for_line(logs["worker"], "ready", processes["worker"], timeout_s=120)
        wait_ready(processes["api"], base_url, logs["api"], timeout_s=120)
        run_id = httpx.post(f"{base_url}/v1/conversations/c1/messages",
                            json={"content": "go"}).json()["run_id"]
        wait_until(lambda: _statuses(base_url, [run_id]) == ["succeeded"], timeout_s=60,
                   what="the run's end")
    finally:
        for process in processes.values():
            stop(process)
    impatient = logs["impatient"].read_text()
    assert "was still unavailable after" in impatient and "--db-wait" not in impatient
    for name in ("worker", "api"):
        assert "is reachable" in logs[name].read_text(), name
