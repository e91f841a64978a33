"""A PostgreSQL restart with runs in flight: 503s while it is down, never a 500, and every
node (API node, worker) carries on by itself once it is back."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg
import pytest

from dcbrain.durable import PostgresDurableStore, StoreWriter
from dcbrain.durable.testing import PostgresCluster, fresh_database
from dcbrain.exceptions import DatabaseUnavailable
from support.durable_processes import Cluster, count, wait_until

RUNS = 4
TOOLS = ("step_one", "step_two", "step_three")


def test_a_store_that_does_not_wait_raises_database_unavailable_then_works_at_once_again(
    postgres_cluster: PostgresCluster,
) -> None:
    store = PostgresDurableStore(fresh_database(postgres_cluster.url))
    try:
        store.save_run("r1", "c1", "queued", {})
        assert store.get_run("r1") is not None  # leaves an idle connection in the pool
        postgres_cluster.stop()
        with pytest.raises(DatabaseUnavailable, match="unavailable"):
            store.get_run("r1")
        postgres_cluster.start()
        # The pool's connections died with the server: none of them is handed out again.
        record = store.get_run("r1")
    finally:
        store.close()
    assert record is not None and record.status == "queued"


def test_a_worker_store_and_its_writer_wait_the_outage_out(
    postgres_cluster: PostgresCluster,
) -> None:
    url = fresh_database(postgres_cluster.url)
    waiting = PostgresDurableStore(url, outage_wait_s=120)
    writer = StoreWriter(PostgresDurableStore(url))  # fails fast: the writer writes again
    outcome: list[object] = []
    try:
        waiting.save_run("r1", "c1", "running", {})
        postgres_cluster.stop()
        writer.add_events("r1", [{"seq": 0, "type": "start"}])
        saver = threading.Thread(target=lambda: outcome.append(
            waiting.update_run("r1", "succeeded", {}, only_from=("running",))))
        saver.start()
        postgres_cluster.start()
        saver.join(60)
        writer.flush()
        events = waiting.events("r1")
    finally:
        writer.close()
        waiting.close()
    assert [getattr(record, "status", None) for record in outcome] == ["succeeded"]
    assert events == [{"seq": 0, "type": "start"}]


class _Poller(threading.Thread):
    """Asks the API node what it is asked in production, over and over, and keeps the answers."""

    def __init__(self, base_url: str, run_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.base_url = base_url
        self.run_ids = run_ids
        #: (path, status, body, Retry-After)
        self.answers: list[tuple[str, int, str, str | None]] = []
        self.accepted: list[str] = []  # runs posted during the outage that were taken
        self.stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            turn = 0
            while not self.stopping.is_set():
                turn += 1
                self._ask(client, "GET", "/v1/ready")
                self._ask(client, "GET", f"/v1/runs/{self.run_ids[turn % len(self.run_ids)]}")
                self._ask(client, "GET", f"/v1/conversations/c{turn % RUNS}")
                posted = self._ask(client, "POST", f"/v1/conversations/late{turn}/messages",
                                   json={"content": "go"})
                if posted is not None and posted.status_code == 202:
                    self.accepted.append(posted.json()["run_id"])
                self.stopping.wait(0.05)

    def _ask(self, client: httpx.Client, method: str, path: str,
             **kwargs: object) -> httpx.Response | None:
        try:
            response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.TransportError as exc:
            self.answers.append((path, 0, repr(exc), None))
            return None
        self.answers.append((path, response.status_code, response.text[:300],
                             response.headers.get("retry-after")))
        return response

    def statuses(self, path: str) -> list[int]:
        return [answer[1] for answer in self.answers if answer[0] == path]


@pytest.fixture
def outage_nodes(cluster: Callable[..., Cluster],
                 postgres_cluster: PostgresCluster) -> tuple[Cluster, str]:
    """The test's nodes (each call of a tool takes 1 s) and a database on the cluster."""
    return cluster(delay_s=1.0), fresh_database(postgres_cluster.url)


def _polled_runs(nodes: Cluster, runs: int) -> tuple[list[str], _Poller]:
    """``runs`` runs sent, one of their calls finished, and a poller asking about them."""
    run_ids = [nodes.send(f"c{i}") for i in range(runs)]
    wait_until(lambda: count(nodes.directory, "step_one", "finished") > 0,
               what="a finished call")
    poller = _Poller(nodes.base_url, run_ids)
    poller.start()
    return run_ids, poller


def _accepted_once_ready(poller: _Poller) -> list[str]:
    """Once ``/v1/ready`` answers 200 again: the poller stopped, the runs it sent."""
    wait_until(lambda: poller.statuses("/v1/ready")[-1:] == [200], timeout_s=180,
               what="ready again")
    poller.stopping.set()
    poller.join()
    return poller.accepted


def test_a_postgres_restart_mid_run_answers_503_then_every_run_finishes(
    outage_nodes: tuple[Cluster, str], postgres_cluster: PostgresCluster
) -> None:
    nodes, postgres_url = outage_nodes
    tmp_path, poller = nodes.directory, None
    try:
        nodes.worker("worker", postgres_url, "--concurrency", "8")
        nodes.api(postgres_url, ready=True)
        run_ids, poller = _polled_runs(nodes, RUNS)
        postgres_cluster.stop()
        wait_until(lambda: 503 in poller.statuses("/v1/ready")  # type: ignore[union-attr]
                   and 503 in [a[1] for a in poller.answers if a[0].endswith("/messages")],
                   what="503s while PostgreSQL is down")
        postgres_cluster.start()
        everything = run_ids + _accepted_once_ready(poller)
        runs = nodes.wait_ended(everything)
    finally:
        if poller is not None:
            poller.stopping.set()
        nodes.close()
    answers = poller.answers
    assert [a for a in answers if a[1] >= 500 and a[1] != 503] == [], answers
    ready = poller.statuses("/v1/ready")
    assert 503 in ready and ready[-1] == 200
    assert all(a[3] is not None for a in answers if a[1] == 503), answers
    assert [r["status"] for r in runs] == ["succeeded"] * len(everything), runs
    # Every call finished once: an outage repeats none of them.
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [len(everything)] * 3


OUTAGE_S = 20.0
CLUSTER_RUNS = 10


def _json_lines(log: Path) -> list[dict[str, object]]:
    """Every line of ``log`` as JSON (a line that is not fails the test, naming it)."""
    lines = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        try:
            lines.append(json.loads(line))
        except ValueError:
            pytest.fail(f"{log.name}:{number} is not a JSON line: {line[:300]!r}")
    return lines


@pytest.mark.slow  # about 90 s on a loaded two-core machine: 20 s of it the outage
def test_postgres_down_20_s_under_load_changes_nothing_for_two_workers_and_an_api_node(
    outage_nodes: tuple[Cluster, str], postgres_cluster: PostgresCluster
) -> None:
    nodes, postgres_url = outage_nodes
    tmp_path, poller = nodes.directory, None
    try:
        for name in ("w1", "w2"):
            nodes.worker(name, postgres_url, "--concurrency", "4", "--log-format", "json")
        nodes.api(postgres_url, "--log-format", "json", ready=True)
        run_ids, poller = _polled_runs(nodes, CLUSTER_RUNS)
        postgres_cluster.stop()
        time.sleep(OUTAGE_S)  # the outage itself: every heartbeat fails meanwhile
        postgres_cluster.start()
        everything = run_ids + _accepted_once_ready(poller)
        runs = nodes.wait_ended(everything, timeout_s=180)
        with psycopg.connect(postgres_url) as conn:
            executions = dict(conn.execute(
                "SELECT run_id, (data->>'executions')::int FROM dcbrain_runs "
                "WHERE run_id = ANY(%s)", (everything,)).fetchall())
    finally:
        if poller is not None:
            poller.stopping.set()
        for process in nodes.processes.values():  # all at once: each drains on its own
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        nodes.close()
    logs = {name: nodes.log(name) for name in ("w1", "w2", "api")}
    answers = poller.answers
    assert [a for a in answers if a[1] >= 500 and a[1] != 503] == [], answers
    assert 503 in poller.statuses("/v1/ready")
    assert [r["status"] for r in runs] == ["succeeded"] * len(everything), runs
    # No call lost, none repeated: nobody was called dead, so every run executed once.
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [len(everything)] * 3
    assert [count(tmp_path, name, "started") for name in TOOLS] == [len(everything)] * 3
    assert set(executions.values()) == {1}, executions
    worker_lines = {name: _json_lines(logs[name]) for name in ("w1", "w2")}
    api_lines = _json_lines(logs["api"])
    for name, lines in worker_lines.items():
        messages = [str(line["message"]) for line in lines]
        assert not [m for m in messages if "is silent" in m], (name, messages)
        assert any("heartbeat failed" in m for m in messages), name  # it saw the outage
        assert any(f"dcbrain worker {name} ready" in m for m in messages), name
    assert any("dcbrain serving on" in str(line["message"]) for line in api_lines)
