"""A rolling upgrade: the old version's last worker dies mid-run while a new-version worker
lives. The run is reported stranded, not taken or lost; an operator resumes it on purpose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

import httpx
import psycopg

from support.durable_processes import Cluster, count, planner_requests, wait_until

TOOLS = ("step_one", "step_two", "step_three")
OLD, NEW = "v1-old", "v2-new"


def _runs_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("DCBRAIN_APP_VERSION", None)
    return subprocess.run([sys.executable, "-m", "dcbrain.cli", "runs", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _worker_rows(postgres_url: str) -> dict[str, str | None]:
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT executor_id, app_version FROM dcbrain_workers").fetchall()
    return {row[0]: row[1] for row in rows}


def test_a_run_of_a_version_without_workers_is_stranded_then_resumed_under_the_new_one(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    nodes = cluster(delay_s=1.0)
    tmp_path = nodes.directory
    nodes.worker("old", postgres_url, "--app-version", OLD)
    nodes.api(postgres_url, env_vars={"DCBRAIN_APP_VERSION": OLD})
    nodes.worker("new", postgres_url, env_vars={"DCBRAIN_APP_VERSION": NEW})
    run_id = nodes.send()
    old_pid, new_pid = nodes.processes["old"].pid, nodes.processes["new"].pid
    wait_until(lambda: count(tmp_path, "step_two", "started", old_pid) > 0,
               what="the old worker in the middle of the run")
    nodes.kill("old")

    wait_until(lambda: nodes.status(run_id) == "stranded", timeout_s=90,
               what="the run stranded")
    warning = nodes.log("new").read_text()
    kept_rows = _worker_rows(postgres_url)
    new_calls_before_resume = sum(count(tmp_path, name, "started", new_pid) for name in TOOLS)
    refused = _runs_cli("resume", run_id, "--db", postgres_url, "--app-version", NEW)
    resumed = _runs_cli("resume", run_id, "--db", postgres_url, "--app-version", NEW,
                        "--any-version")
    wait_until(lambda: nodes.status(run_id) not in ("queued", "running", "stranded"),
               timeout_s=90, what="the resumed run's end")
    run = nodes.run(run_id)
    stream = nodes.stream(run_id)
    nodes.close()

    # Reported, not taken over or deleted: a warning naming the run and its version, the
    # dead worker's heartbeat row kept, no call executed by the other version.
    assert f"stranded run(s) {run_id}: application version {OLD}" in warning, warning
    assert "worker old is silent" not in warning
    assert kept_rows == {"old": OLD, "new": NEW}
    assert new_calls_before_resume == 0
    # Resuming under its own version is refused (no worker runs it), with the way out named.
    assert refused.returncode == 1, refused
    assert f"no live worker runs application version {OLD}" in refused.stderr
    assert "--any-version" in refused.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"run_id": run_id, "status": "queued",
                                          "resumed_from_version": OLD,
                                          "resumed_under_version": NEW}
    assert run["status"] == "succeeded", run
    assert run["result"]["final_result"] == 4
    assert stream.count("event: end") == 1
    # Finished calls ran once: the new worker answered them from the journal and ran only
    # the call the kill cut off, and the rest; the plan was not asked for again.
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [1, 1, 1]
    assert count(tmp_path, "step_one", "started") == 1
    assert count(tmp_path, "step_two", "started") == 2
    assert count(tmp_path, "step_three", "started", new_pid) == 1
    assert planner_requests(nodes.llm) == 1


def test_serve_restarted_under_another_version_reports_its_old_run_stranded(
    cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=1.0)
    tmp_path = nodes.directory
    nodes.serve(env_vars={"DCBRAIN_APP_VERSION": OLD})
    run_id = nodes.send()
    wait_until(lambda: count(tmp_path, "step_two", "started") == 1, what="step_two running")
    nodes.kill("serve")
    nodes.serve(env_vars={"DCBRAIN_APP_VERSION": NEW})
    wait_until(lambda: nodes.status(run_id) == "stranded", what="the old run stranded")
    aborted = httpx.post(f"{nodes.base_url}/v1/runs/{run_id}/abort", json={})
    run = nodes.run(run_id)
    stream = nodes.stream(run_id)
    nodes.close()
    log = nodes.log("serve")
    assert f"stranded run(s) {run_id}: application version {OLD}" in log.read_text()
    assert aborted.status_code == 202
    assert (run["status"], run["reason"]) == ("aborted", "aborted")
    assert stream.count("event: end") == 1
    assert count(tmp_path, "step_two", "started") == 1  # the new version never resumed it
