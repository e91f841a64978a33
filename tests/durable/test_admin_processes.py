"""Operating real ``dcbrain serve`` processes: resuming a stopped workflow, retention."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

from dcbrain.memory import SQLiteRunStore
from support.cli_runner import cli_runner
from support.durable_processes import Cluster, wait_until


def _cancel_workflow(database: Path, run_id: str) -> None:
    """Cancel the run's DBOS workflow while no server runs (``dbos workflow cancel``)."""
    from dcbrain.durable import DurableEngine
    from dcbrain.durable.setup import open_store

    runs = SQLiteRunStore(database)
    url, store = open_store(None, runs)
    engine = DurableEngine(url, store, app_version="operator")
    engine.start()
    try:
        engine.cancel(run_id)
        assert engine.workflow_statuses([run_id]) == {run_id: "CANCELLED"}
    finally:
        engine.stop()
        runs.close()


def test_a_crashed_run_whose_workflow_was_cancelled_is_resumed_and_finishes(
    cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=2.0)
    nodes.serve()
    run_id = nodes.send()
    nodes.kill_during(run_id, "step_two")
    _cancel_workflow(nodes.directory / "brain.db", run_id)
    run_cli = cli_runner(nodes.directory)
    target = ["--config", str(nodes.config)]  # the database: the server need not be up
    nodes.serve()
    # Not resumed by the restart: the workflow was cancelled, the record says running.
    assert nodes.status(run_id) == "running"
    resumed = run_cli("runs", "resume", run_id, *target)
    assert resumed.returncode == 0, resumed.stderr
    wait_until(lambda: nodes.status(run_id) != "running", what="the resumed run's end")
    run = nodes.run(run_id)
    again = run_cli("runs", "resume", run_id, *target)
    nodes.close()
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 4), run
    # The journal replayed what finished before the crash; the call cut off ran again.
    assert nodes.started("step_one", "step_two", "step_three") == [1, 2, 1]
    assert again.returncode == 1 and "has ended (succeeded)" in again.stderr


def test_serve_prunes_finished_runs_as_the_retention_table_says(
    tmp_path: Path, cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=0.0)
    with nodes.config.open("a") as out:
        out.write("[retention]\ndays = 30\ncheck_every_minutes = 60\n")
    runs = SQLiteRunStore(tmp_path / "brain.db")
    old = time.time() - 40 * 86400
    for run_id, status in (("1" * 32, "succeeded"), ("2" * 32, "running"),
                           ("3" * 32, "succeeded")):
        runs.save_run(run_id, "c1", status, {"question": "q"})
        runs.append_run_event(run_id, 0, {"seq": 0, "type": "final"})
    import sqlite3

    with sqlite3.connect(tmp_path / "brain.db") as conn:
        conn.execute("UPDATE runs SET updated_at = ? WHERE run_id IN (?, ?)",
                     (old, "1" * 32, "2" * 32))
    runs.close()
    nodes.serve()
    wait_until(lambda: httpx.get(f"{nodes.base_url}/v1/runs/{'1' * 32}").status_code == 404,
               what="the old run's pruning")
    kept = [httpx.get(f"{nodes.base_url}/v1/runs/{run_id}").status_code
            for run_id in ("2" * 32, "3" * 32)]
    nodes.close()
    assert kept == [200, 200]  # a live run, however old, and a recent one stay
