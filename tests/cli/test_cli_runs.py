"""``dcbrain runs``: against a live server (``--url``) and against its SQLite file."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.server import ServerSettings, create_app
from support.cli_runner import RunCLI
from support.server_app import Api, BrainScripts, Gate, holding_brain, served_api

OLD, NEW, LIVE = "1" * 32, "2" * 32, "3" * 32


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SQLiteMemory]:
    """The server's file, with an old finished run, a new one and an old running one."""
    store = SQLiteMemory(tmp_path / "brain.db")
    for run_id, cid, status in ((OLD, "c1", "succeeded"), (NEW, "c2", "failed"),
                                (LIVE, "c1", "running")):
        store.save_run(run_id, cid, status, {"question": f"question {run_id[0]}"})
        store.append_run_event(run_id, 0, {"seq": 0, "type": "final"})
    with sqlite3.connect(store.path) as conn:
        conn.executemany("UPDATE runs SET created_at = ?, updated_at = ? WHERE run_id = ?",
                         [(time.time() - 40 * 86400, time.time() - 40 * 86400, OLD),
                          (time.time() - 50 * 86400, time.time() - 50 * 86400, LIVE)])
    yield store
    store.close()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "dcbrain.toml"
    path.write_text('[memory]\npath = "brain.db"\n')
    return path


@contextmanager
def _server(memory: SQLiteMemory, brains: BrainScripts | None = None,
            token: str | None = None) -> Iterator[Api]:
    app = create_app(Runtime(store=memory, brains=brains or BrainScripts(memory)),
                     ServerSettings(api_token=token))
    with served_api(app, token) as api:
        yield api


def _listed(result: object) -> list[str]:
    page = json.loads(result.stdout)  # type: ignore[attr-defined]
    return [run["run_id"] for run in page["runs"]]


def test_ls_and_show_through_the_server(run_cli: RunCLI, memory: SQLiteMemory) -> None:
    with _server(memory) as api:
        url = ["--url", api.base_url]
        table = run_cli("runs", "ls", *url)
        failed = run_cli("runs", "ls", "--status", "failed", "--json", *url)
        of_c1 = run_cli("runs", "ls", "--conversation", "c1", "--json", *url)
        first = run_cli("runs", "ls", "--limit", "1", "--json", *url)
        cursor = json.loads(first.stdout)["next_cursor"]
        second = run_cli("runs", "ls", "--limit", "1", "--cursor", cursor, "--json", *url)
        shown = run_cli("runs", "show", NEW, *url)
        unknown = run_cli("runs", "show", "0" * 32, *url)
        bad = run_cli("runs", "ls", "--status", "done", *url)
    assert table.returncode == 0, table.stderr
    assert OLD in table.stdout and "succeeded" in table.stdout and "question 1" in table.stdout
    assert _listed(failed) == [NEW]
    assert _listed(of_c1) == [OLD, LIVE]  # newest first
    assert _listed(first) + _listed(second) == [NEW, OLD]
    assert json.loads(shown.stdout)["status"] == "failed"
    assert unknown.returncode == 1 and "no run" in unknown.stderr
    assert bad.returncode == 2 and "unknown status 'done'" in bad.stderr


def test_cancel_resume_and_prune_through_the_server(
    run_cli: RunCLI, memory: SQLiteMemory
) -> None:
    gate = Gate()
    brains = BrainScripts(memory).then(lambda m: holding_brain(m, gate))
    with _server(memory, brains, token="secret") as api:
        url = ["--url", api.base_url, "--token", "secret"]
        run_id = api.send_held("c9", "hold", gate)
        cancelled = run_cli("runs", "cancel", run_id, *url)
        run = api.wait_for(run_id)
        gate.opened.set()
        resumed = run_cli("runs", "resume", run_id, *url)
        no_token = run_cli("runs", "ls", "--url", api.base_url)
        pruned = run_cli("runs", "prune", "--older-than", "30d", *url)
        bad = run_cli("runs", "prune", "--older-than", "30 days", *url)
        left = {r["run_id"] for r in api.http.get("/v1/runs").json()["runs"]}
    assert cancelled.returncode == 0, cancelled.stderr
    assert run["status"] == "aborted"
    assert resumed.returncode == 1 and "not durable" in resumed.stderr
    assert no_token.returncode == 2 and "401" in no_token.stderr
    assert pruned.returncode == 0 and pruned.stdout.strip() == "pruned 1 run(s)"
    assert bad.returncode == 2 and "not a duration" in bad.stderr
    assert OLD not in left and {NEW, run_id} <= left


def test_ls_show_prune_and_refusals_on_the_database(
    run_cli: RunCLI, memory: SQLiteMemory, config: Path
) -> None:
    db = ["--config", str(config)]
    listed = run_cli("runs", "ls", "--status", "succeeded,running", "--json", *db)
    shown = run_cli("runs", "show", OLD, *db)
    cancel = run_cli("runs", "cancel", LIVE, *db)
    resume = run_cli("runs", "resume", LIVE, *db)
    pruned = run_cli("runs", "prune", "--older-than", "30d", *db)
    both = run_cli("runs", "ls", "--url", "http://127.0.0.1:1", "--db", "postgresql://x/y")
    missing = run_cli("runs", "ls", "--config", str(config.with_name("none.toml")))
    assert listed.returncode == 0, listed.stderr
    assert _listed(listed) == [OLD, LIVE]
    assert json.loads(shown.stdout)["question"] == "question 1"
    # The server of this file ran its runs itself: only it can stop one.
    assert cancel.returncode == 1 and "through the server (--url)" in cancel.stderr
    assert resume.returncode == 1 and "not durable" in resume.stderr
    assert pruned.returncode == 0 and pruned.stdout.strip() == "pruned 1 run(s)"
    assert memory.get_run(OLD) is None and memory.run_events(OLD) == []
    assert memory.get_run(LIVE) is not None  # running, however old: never pruned
    assert both.returncode == 2 and "not both" in both.stderr
    assert missing.returncode == 2


def test_ls_prints_whole_run_ids_and_show_takes_a_unique_prefix(
    run_cli: RunCLI, memory: SQLiteMemory, config: Path
) -> None:
    memory.save_run("2" * 8 + "a" * 24, "c3", "succeeded", {"question": "another 2"})
    db = ["--config", str(config)]
    with _server(memory) as api:
        url = ["--url", api.base_url]
        table = run_cli("runs", "ls", *url, env={"COLUMNS": "60"})
        by_prefix = run_cli("runs", "show", "111", *url)
        ambiguous = run_cli("runs", "show", "2222", *url)
        unknown = run_cli("runs", "show", "9", *url)
    local = run_cli("runs", "show", "33", *db)
    local_ambiguous = run_cli("runs", "show", "22", *db)
    assert table.returncode == 0, table.stderr
    assert all(run_id in table.stdout for run_id in (OLD, NEW, LIVE))  # never cut
    assert json.loads(by_prefix.stdout)["run_id"] == OLD
    assert ambiguous.returncode == 1 and "several run ids" in ambiguous.stderr
    assert NEW in ambiguous.stderr
    assert unknown.returncode == 1 and "no run id starts with it" in unknown.stderr
    assert json.loads(local.stdout)["run_id"] == LIVE
    assert local_ambiguous.returncode == 1 and "give more of the id" in local_ambiguous.stderr
