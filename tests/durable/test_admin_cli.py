"""``dcbrain runs`` on durable runs: the database of a live server (SQLite files, or the
PostgreSQL its workers share) and the server's URL."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcbrain import SQLiteMemory
from dcbrain.durable import PostgresDurableStore, SQLiteDurableStore, application_version
from dcbrain.durable._urls import sqlite_url
from support.cli_runner import cli_runner
from support.durable_brains import CountingTools
from support.durable_harness import Backend, durable_server
from support.durable_processes import wait_until
from support.postgres_fixtures import require_durable_extra


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Backend, list[str]]]:
    """A backend laid out as ``dcbrain serve`` lays it out, and how the CLI reaches it."""
    require_durable_extra()
    if request.param == "sqlite":
        memory = SQLiteMemory(tmp_path / "brain.db")
        store = SQLiteDurableStore(memory, tmp_path / "brain.db-journal.sqlite")
        config = tmp_path / "dcbrain.toml"
        config.write_text('[memory]\npath = "brain.db"\n')
        yield (Backend("sqlite", sqlite_url(tmp_path / "brain.db-dbos.sqlite"), store),
               ["--config", str(config)])
        memory.close()
    else:
        url = request.getfixturevalue("postgres_url")
        pg = PostgresDurableStore(url)
        yield Backend("postgres", url, pg), ["--db", url]
        pg.close()


def test_cancel_resume_ls_and_prune_on_the_database_of_a_live_server(
    served: tuple[Backend, list[str]], counting: CountingTools, tmp_path: Path
) -> None:
    backend, db = served
    run_cli = cli_runner(tmp_path)
    counting.hold = threading.Event()
    counting.hold_s = 600  # every command below is a process of its own, slow on a busy machine
    conversations = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, conversations, concurrency=1) as api:
        running = counting.send_held(api, "c1", "count")
        queued = api.send("c2", "count")
        doomed = api.send("c3", "count")
        listed = run_cli("runs", "ls", "--status", "queued", "--json", *db)
        cancel_queued = run_cli("runs", "cancel", doomed, *db)
        api.engine.cancel(queued)  # its workflow stops under its record
        # a version no process runs is refused: nothing would ever execute the run
        unknown = run_cli("runs", "resume", queued, "--any-version", "--app-version",
                          "dcbrain-0-nobody", *db)
        # re-queued under the version of this test's worker (a CLI's own is its config's)
        resumed = run_cli("runs", "resume", queued, "--any-version", "--app-version",
                          application_version("t"), *db)
        refused = run_cli("runs", "resume", doomed, *db)
        cancel_running = run_cli("runs", "cancel", running, *db)
        if backend.name == "sqlite":  # a running run of one process: only its server stops it
            assert cancel_running.returncode == 1, cancel_running.stderr
            assert "through the server (--url)" in cancel_running.stderr
            cancel_running = run_cli("runs", "cancel", running, "--url", api.base_url)
        stopped = api.wait_for(running)
        counting.hold.set()
        finished = api.wait_for(queued)
        shown = run_cli("runs", "show", queued, *db)
        wait_until(lambda: set(api.engine.workflow_statuses([running, queued, doomed]).values())
                   <= {"SUCCESS", "ERROR", "CANCELLED"}, what="the workflows' ends")
        pruned = run_cli("runs", "prune", "--older-than", "1s", *db)
        left = [r["run_id"] for r in api.http.get("/v1/runs").json()["runs"]]
    conversations.close()
    assert [r["run_id"] for r in json.loads(listed.stdout)["runs"]] == [doomed, queued]
    assert cancel_queued.returncode == 0, cancel_queued.stderr
    assert unknown.returncode == 1 and "dcbrain-0-nobody" in unknown.stderr
    assert ("unknown here" if backend.name == "sqlite" else "no live worker runs") \
        in unknown.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert refused.returncode == 1 and "has ended (aborted)" in refused.stderr
    assert cancel_running.returncode == 0, cancel_running.stderr
    assert stopped["status"] == "aborted"
    assert finished["status"] == "succeeded"
    assert json.loads(shown.stdout)["status"] == "succeeded"
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.strip() == "pruned 3 run(s)" and left == []
