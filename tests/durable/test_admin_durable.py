"""The admin API on durable runs (SQLite, PostgreSQL): listing, cancel, resume, pruning."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools
from support.durable_harness import Backend, age_runs, durable_server, held_server, waiting_run
from support.durable_processes import wait_until
from support.server_app import Api


def _ids(api: Api, **params: str) -> list[str]:
    response = api.http.get("/v1/runs", params=params)
    assert response.status_code == 200, response.text
    return [run["run_id"] for run in response.json()["runs"]]


def test_runs_are_listed_cancelled_and_a_cancelled_workflow_resumed(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    # One run at a time: the second and third message wait in the queue.
    with held_server(backend, counting, tmp_path, concurrency=1) as api:
        running = counting.send_held(api, "c1", "count")
        queued = api.send("c2", "count")
        doomed = api.send("c3", "count")
        assert _ids(api, status="running") == [running]
        assert _ids(api, status="queued") == [doomed, queued]
        assert _ids(api, conversation_id="c2") == [queued]
        assert _ids(api, status="queued,running", limit="2") == [doomed, queued]

        cancelled = api.http.post(f"/v1/runs/{doomed}/cancel", json={})
        assert cancelled.status_code == 202
        assert api.wait_for(doomed)["status"] == "aborted"
        assert api.engine.workflow_statuses([doomed]) == {doomed: "CANCELLED"}
        # The queued run's workflow is cancelled under it (as `dbos workflow cancel`
        # would): its record still says queued, and no worker would ever start it.
        api.engine.cancel(queued)
        refused = api.http.post(f"/v1/runs/{doomed}/resume", json={})
        resumed = api.http.post(f"/v1/runs/{queued}/resume", json={})
        again = api.http.post(f"/v1/runs/{queued}/resume", json={})

        stopped = api.http.post(f"/v1/runs/{running}/cancel", json={})
        assert api.wait_for(running)["status"] == "aborted"
        counting.hold.set()
        finished = api.wait_for(queued)
        assert _ids(api, status="succeeded") == [queued]
    assert refused.status_code == 409 and "aborted" in refused.json()["detail"]
    assert resumed.status_code == 202
    assert (resumed.json()["run_id"], resumed.json()["resuming"]) == (queued, True)
    assert again.status_code == 409 and "nothing to resume" in again.json()["detail"]
    assert stopped.status_code == 202
    assert (finished["status"], finished["result"]["final_result"]) == ("succeeded", 4)
    assert counting.count("step_one", "started") == 2  # the cancelled queued run never ran


def _dbos_rows(backend: Backend, run_ids: list[str]) -> dict[str, int]:
    """Rows of DBOS's system tables that name one of the runs' workflows (``<run>`` and its
    continuations ``<run>~<n>``), by table."""
    if backend.name == "sqlite":
        path = backend.url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            tables = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            found: dict[str, int] = {}
            for table in tables:
                columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                for column in columns & {"workflow_uuid", "destination_uuid", "workflow_id"}:
                    for run_id in run_ids:
                        found[table] = found.get(table, 0) + conn.execute(
                            f"SELECT count(*) FROM {table} WHERE {column} = ? OR {column} "
                            "LIKE ?", (run_id, run_id + "~%")).fetchone()[0]
            return found
    import psycopg

    with psycopg.connect(backend.url, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE "
            "table_schema = 'dbos' AND column_name IN ('workflow_uuid', 'destination_uuid', "
            "'workflow_id')").fetchall()
        pg_found: dict[str, int] = {}
        for table, column in columns:
            row: Any = conn.execute(
                f'SELECT count(*) FROM dbos."{table}" WHERE "{column}" = ANY(%s) OR '
                f'"{column}" LIKE ANY(%s)', (run_ids, [r + "~%" for r in run_ids])).fetchone()
            pg_found[table] = pg_found.get(table, 0) + int(row[0])
        return pg_found


def test_pruning_deletes_old_finished_runs_with_their_events_journal_and_dbos_rows(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with held_server(backend, counting, tmp_path) as api:
        old = [api.send(f"old{n}", "count") for n in range(2)]
        counting.hold.set()
        for run_id in old:
            api.wait_for(run_id)
        new = api.send("new", "count")
        api.wait_for(new)
        counting.hold.clear()
        counting.entered.clear()
        live = counting.send_held(api, "live", "count")
        age_runs(backend, [*old, live], 40 * 86400)
        assert sum(_dbos_rows(backend, old).values()) > 0
        assert backend.store.journal(old[0])  # each call of the run is journaled
        pruned = api.http.post("/v1/runs/prune", json={"older_than": "30d"}).json()
        listed = _ids(api)
        live_rows = _dbos_rows(backend, [live])
        counting.hold.set()
        assert api.wait_for(live)["status"] == "succeeded"
    assert pruned["pruned"] == 2
    assert sorted(listed) == sorted([new, live])
    for run_id in old:
        assert backend.store.get_run(run_id) is None
        assert backend.store.events(run_id) == []
        assert backend.store.journal(run_id) == []
    assert _dbos_rows(backend, old) == dict.fromkeys(_dbos_rows(backend, old), 0)
    assert _dbos_rows(backend, [new])["workflow_status"] == 1  # a new run keeps its rows
    assert live_rows["workflow_status"] == 1  # a running run is never pruned
    assert backend.store.journal(new)


def test_a_run_whose_workflow_has_not_ended_is_left_for_a_later_prune(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    memory = SQLiteMemory(tmp_path / "conversations.db")
    with durable_server(backend, counting.brain, memory, concurrency=1) as api:
        finished = api.send("c1", "count")
        api.wait_for(finished)
        counting.hold = threading.Event()
        holder = counting.send_held(api, "c2", "count")
        # Recorded as ended, but its workflow still waits in the queue behind the holder.
        backend.store.save_run("e" * 32, "c3", "succeeded", {"question": "q"})
        api.engine.enqueue("e" * 32, "c3", "q")
        age_runs(backend, ["e" * 32, finished], 40 * 86400)
        pruned = api.http.post("/v1/runs/prune", json={"older_than": "30d"}).json()
        kept = backend.store.get_run("e" * 32)
        counting.hold.set()
        api.wait_for(holder)
        wait_until(lambda: api.engine.workflow_statuses(["e" * 32]) == {"e" * 32: "SUCCESS"},
                   what="the queued workflow's end")
        later = api.http.post("/v1/runs/prune", json={"older_than": "30d"}).json()
    memory.close()
    assert pruned["pruned"] == 1 and backend.store.get_run(finished) is None
    assert kept is not None
    assert later["pruned"] == 1 and backend.store.get_run("e" * 32) is None


def test_pages_of_the_store_never_repeat_or_skip_a_run(backend: Backend) -> None:
    from dcbrain.runs.listing import RunPosition, RunQuery, page_of

    run_ids = [f"{n:032x}" for n in range(1, 24)]
    for n, run_id in enumerate(run_ids):
        backend.store.save_run(run_id, f"c{n % 2}", "succeeded", {"question": "q"})
    for n in range(0, len(run_ids), 4):  # four runs share each creation time
        age_runs(backend, run_ids[n:n + 4], 1000.0 - n)
    created = {run_id: backend.store.get_run(run_id).created_at  # type: ignore[union-attr]
               for run_id in run_ids}
    expected = sorted(run_ids, key=lambda r: (created[r], r), reverse=True)
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = RunQuery.parse(limit=5, cursor=cursor)
        rows = backend.store.page_runs(query.statuses, None, query.limit + 1, query.before)
        page = page_of(rows, query, lambda row: {"run_id": row.run_id})
        seen += [run["run_id"] for run in page.runs]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        assert RunPosition.from_cursor(cursor).run_id == seen[-1]
    assert seen == expected
    only_c1 = backend.store.page_runs(("succeeded",), "c1", 100, None)
    assert [row.run_id for row in only_c1] == [r for r in expected if int(r, 16) % 2 == 0]


def test_a_run_that_waited_for_approval_is_pruned_with_its_continuation_workflow(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    with waiting_run(backend, counting, tmp_path) as (api, run_id, _):
        waiting = api.http.post(f"/v1/runs/{run_id}/resume", json={})
        [pending] = api.http.get(f"/v1/runs/{run_id}").json()["approvals"]
        api.http.post(f"/v1/runs/{run_id}/approvals/{pending['call_id']}",
                      json={"approved": True})
        assert api.wait_for(run_id)["status"] == "succeeded"
        wait_until(lambda: _dbos_rows(backend, [run_id])["workflow_status"] == 2 and set(
            api.engine.workflow_statuses([run_id, run_id + "~1"]).values()) == {"SUCCESS"},
            what="both workflows' ends")
        age_runs(backend, [run_id], 40 * 86400)
        pruned = api.http.post("/v1/runs/prune", json={"older_than": "30d"}).json()
    assert waiting.status_code == 409 and "waits for decisions" in waiting.json()["detail"]
    assert pruned["pruned"] == 1
    assert set(_dbos_rows(backend, [run_id]).values()) == {0}
