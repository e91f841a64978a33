"""SIGTERM drains ``dcbrain worker`` on PostgreSQL: real processes, real signals.

The draining worker takes no more runs from the queue, lets its runs in flight finish
within ``--drain-timeout`` and leaves the others pending: its restart (same
``--executor-id``) resumes them, and the readers on the API node follow them to their end.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx

from support.drain_processes import (
    StreamReader,
    exits_within,
    nap_server,
    naps,
    post,
)
from support.durable_processes import (
    start,
    stop,
    wait_for_line,
    wait_healthy,
    wait_until,
)
from support.fake_openai import FakeOpenAIServer

DRAIN_S = 4.0
EXIT_MARGIN_S = 15.0
#: LONG outlasts the exit bound: a worker waiting for its cut-off tool thread would fail it.
SHORT, LONG, LATE = 2.0, 30.0, 1.0


def _status(base_url: str, run_id: str) -> str:
    status: str = httpx.get(f"{base_url}/v1/runs/{run_id}", timeout=30).json()["status"]
    return status


def test_a_draining_worker_finishes_short_runs_takes_no_new_ones_and_resumes_the_rest(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    config, port, base_url = nap_server(tmp_path, fake_openai)
    logs = {name: tmp_path / f"{name}.log" for name in ("worker", "api")}
    worker_args = ["worker", "--config", str(config), "--db", postgres_url,
                   "--executor-id", "w1", "--drain-timeout", str(DRAIN_S)]
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        processes["worker"] = start(worker_args, logs["worker"])
        wait_for_line(logs["worker"], "ready", processes["worker"])
        processes["api"] = start(["serve", "--config", str(config), "--db", postgres_url,
                                  "--role", "api", "--port", str(port)], logs["api"])
        wait_healthy(processes["api"], base_url, logs["api"])
        short = post(base_url, "short", f"nap {SHORT}").json()["run_id"]
        long = post(base_url, "long", f"nap {LONG}").json()["run_id"]
        wait_until(lambda: naps(tmp_path, "started") == 2, what="both naps running")
        readers = {run_id: StreamReader(base_url, run_id) for run_id in (short, long)}
        processes["worker"].send_signal(signal.SIGTERM)
        wait_for_line(logs["worker"], "draining", processes["worker"])
        late = post(base_url, "late", f"nap {LATE}").json()["run_id"]
        took_s = exits_within(processes["worker"], DRAIN_S + EXIT_MARGIN_S)
        readers[short].join()
        after_drain = {run_id: _status(base_url, run_id) for run_id in (short, long, late)}
        processes["worker"] = start(worker_args, logs["worker"])  # same executor id
        readers[long].join(120)
        wait_until(lambda: _status(base_url, late) == "succeeded", timeout_s=120,
                   what="the late run's end")
    finally:
        for process in processes.values():
            stop(process)
    assert took_s < DRAIN_S + EXIT_MARGIN_S
    assert after_drain == {short: "succeeded", long: "running", late: "queued"}
    assert readers[short].final is not None and readers[short].final["status"] == "succeeded"
    assert readers[short].end == {"run_id": short, "status": "succeeded"}
    # The long run's reader stayed on the API node and saw it resumed and finished.
    assert readers[long].end == {"run_id": long, "status": "succeeded"}
    assert [e["type"] for e in readers[long].events].count("run_resumed") == 1
    assert [naps(tmp_path, "finished", s) for s in (SHORT, LONG, LATE)] == [1, 1, 1]
    assert naps(tmp_path, "started", LONG) == 2  # cut off by the drain timeout, then again
    text = logs["worker"].read_text()
    assert "dcbrain worker w1 draining: no new runs; 2 in flight get up to 4 s" in text
    assert "dcbrain worker w1 stopping: 1 run(s) handed back to the queue" in text
