"""Which worker may take over which runs: the takeover rule, stranded runs, resuming them."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from dcbrain.cli.worker_cmd import DEFAULT_TAKEOVER_AFTER_S
from dcbrain.durable import DurableEngine, PostgresDurableStore, application_version
from dcbrain.durable.engine import DEAD_AFTER_S
from dcbrain.durable.workers import (
    PendingRun,
    WorkerRegistry,
    fair_share,
    mark_stranded,
    stranded,
    stranded_runs,
)
from dcbrain.exceptions import RunConflict
from support.durable_brains import CountingTools
from support.durable_harness import Backend, durable_server, running_engine


@pytest.fixture
def migrated(postgres_url: str, counting: CountingTools) -> Iterator[Backend]:
    """A database whose DBOS schema a worker created, with no worker live any more."""
    store = PostgresDurableStore(postgres_url)
    backend = Backend("postgres", postgres_url, store)
    with running_engine(backend, counting.brain) as engine:
        pass
    WorkerRegistry(store).forget(engine.executor_id)
    yield backend
    store.close()


def _silence(postgres_url: str, *executor_ids: str) -> None:
    """Make the workers' last heartbeat a minute old."""
    with psycopg.connect(postgres_url) as conn:
        conn.execute("UPDATE dcbrain_workers SET heartbeat_at = heartbeat_at - 60 "
                     "WHERE executor_id = ANY(%s)", (list(executor_ids),))


def test_a_run_is_stranded_only_when_no_live_worker_runs_its_version() -> None:
    pending = [PendingRun("r1", "v1"), PendingRun("r2", "v2"), PendingRun("r3", "v1")]
    assert stranded(pending, {"v2"}) == {"v1": ["r1", "r3"]}
    assert stranded(pending, {"v1", "v2"}) == {}
    assert stranded(pending, set()) == {"v1": ["r1", "r3"], "v2": ["r2"]}
    # A live worker that predates versioned heartbeats may run any version.
    assert stranded(pending, {"v2", None}) == {}


def test_a_worker_claims_only_dead_workers_of_its_own_version(postgres_url: str) -> None:
    store = PostgresDurableStore(postgres_url)
    workers = WorkerRegistry(store)
    try:
        workers.heartbeat("old", "v1")
        workers.heartbeat("new", "v2")
        with psycopg.connect(postgres_url) as conn:  # a row written before versions were
            conn.execute("INSERT INTO dcbrain_workers (executor_id, started_at, heartbeat_at) "
                         "VALUES ('legacy', 0, 0)")
        _silence(postgres_url, "old")
        assert workers.claim_dead(15, "v2") == ["legacy"]  # anyone may claim an unversioned one
        assert workers.dead(15) == {"old": "v1"}  # kept: the runs wait for a v1 worker
        assert workers.versions(15) == {"new": "v2"}
        assert workers.claim_dead(15, "v1") == ["old"]
        assert workers.dead(15) == {}
        workers.heartbeat("new", "v3")  # restarted under another version, same id
        assert workers.versions(15) == {"new": "v3"}
    finally:
        store.close()


def test_stranded_runs_are_marked_once_and_counted_by_version(backend: Backend) -> None:
    store = backend.store
    store.save_run("r1", "c1", "running", {"question": "q", "executor_id": "old"})
    store.save_run("r2", "c2", "queued", {"question": "q"})
    store.save_run("r3", "c3", "succeeded", {"question": "q"})
    assert mark_stranded(store, {"v1": ["r1", "r2", "r3"]}) == {"v1": ["r1", "r2"]}
    assert mark_stranded(store, {"v1": ["r1"]}) == {}  # said once: the warning too
    assert stranded_runs(store) == {"v1": ["r1", "r2"]}
    record = store.get_run("r1")
    assert record is not None and record.status == "stranded"
    assert record.data["stranded_version"] == "v1" and record.data["executor_id"] == "old"
    assert store.get_run("r3").status == "succeeded"  # type: ignore[union-attr]


def test_resume_refuses_what_it_cannot_or_need_not_resume(migrated: Backend) -> None:
    postgres_url, store = migrated.url, migrated.store
    engine = DurableEngine(postgres_url, store, app_version="v2")
    engine.start()
    try:
        store.save_run("ended", "c1", "succeeded", {"question": "q"})
        store.save_run("live", "c2", "queued", {"question": "q"})
        engine.enqueue("live", "c2", "q")
        WorkerRegistry(store).heartbeat("w", "v2")
        with pytest.raises(RunConflict, match="no such run"):
            engine.resume("unknown")
        with pytest.raises(RunConflict, match=r"has ended \(succeeded\)"):
            engine.resume("ended")
        with pytest.raises(RunConflict, match="which a live worker runs"):
            engine.resume("live", any_version=True)
        _silence(postgres_url, "w")
        with pytest.raises(RunConflict, match=r"no live worker runs application version "
                           r"v2 \(live: none\)"):
            engine.resume("live")
        assert store.get_run("live").status == "queued"  # type: ignore[union-attr]
    finally:
        engine.stop()


def test_a_stranded_run_is_ended_at_once_by_an_abort_or_a_newer_message(
    migrated: Backend
) -> None:
    postgres_url, store = migrated.url, migrated.store
    with durable_server(migrated, None, None) as api:  # an API node, no worker
        aborted, superseded = api.send("c1", "one"), api.send("c2", "two")
        for run_id in (aborted, superseded):
            assert store.update_run(run_id, "stranded", {"stranded_version": "v0"},
                                    only_from=("queued",)) is not None
        assert api.http.post(f"/v1/runs/{aborted}/abort", json={}).status_code == 202
        newer = api.send("c2", "three")
        ended = [api.stream(run_id).end for run_id in (aborted, superseded)]
        runs = [api.http.get(f"/v1/runs/{run_id}").json()
                for run_id in (aborted, superseded, newer)]
    assert [end["status"] if end else None for end in ended] == ["aborted", "aborted"]
    assert [(run["status"], run["reason"]) for run in runs[:2]] == [
        ("aborted", "aborted"), ("aborted", "superseded")]
    assert runs[1]["superseded_by"] == newer
    with psycopg.connect(postgres_url) as conn:  # DBOS will never start them
        rows = conn.execute("SELECT workflow_uuid, status FROM dbos.workflow_status "
                            "WHERE workflow_uuid = ANY(%s)", ([aborted, superseded],)).fetchall()
    assert dict(rows) == {aborted: "CANCELLED", superseded: "CANCELLED"}


def test_fair_shares_follow_concurrency_add_up_to_the_load_and_stay_within_each_worker() -> None:
    assert fair_share(12, 16, 32) == 6  # two equal workers, 12 runs: six each
    assert fair_share(20, 16, 18) == 16 and fair_share(20, 2, 18) == 2  # all of it taken
    assert fair_share(3, 4, 8) == 2  # rounded up: 2 + 2 >= 3, no run left waiting
    assert fair_share(0, 4, 8) == 1  # never below one
    assert fair_share(50, 4, 0) == 4  # no live worker counted yet: its own concurrency
    assert DEFAULT_TAKEOVER_AFTER_S == DEAD_AFTER_S  # the CLI's default is the engine's


def test_a_heartbeat_counts_the_silent_workers_it_could_claim(postgres_url: str) -> None:
    store = PostgresDurableStore(postgres_url)
    workers = WorkerRegistry(store)
    try:
        assert workers.heartbeat("a", "v1", 4, silent_for_s=6) == 0
        workers.heartbeat("b", "v1", 4)
        workers.heartbeat("c", "v2", 4)
        _silence(postgres_url, "b", "c")
        assert workers.heartbeat("a", "v1", 4, silent_for_s=6) == 1  # b; c is not v1's
        assert workers.claim_dead(6, "v1") == ["b"]
        assert workers.heartbeat("a", "v1", 4, silent_for_s=6) == 0
    finally:
        workers.close()
        store.close()


def test_an_api_node_is_ready_only_while_a_live_worker_runs_its_version(
    migrated: Backend
) -> None:
    workers = WorkerRegistry(migrated.store)
    try:
        with durable_server(migrated, None, None) as api:  # an API node, no worker
            workers.heartbeat("old", "v-before", 4)
            without = api.http.get("/v1/ready")
            workers.heartbeat("new", application_version("t"), 4)  # the node's version
            with_it = api.http.get("/v1/ready")
    finally:
        workers.close()
    assert without.status_code == 503
    (reason,) = without.json()["missing"]
    assert f"no live worker runs application version {application_version('t')}" in reason
    assert "live: v-before" in reason
    assert with_it.status_code == 200
