"""Readiness of real processes on a private PostgreSQL: an API node is ready with a live
worker only, and nodes started all at once on a fresh database never answer 500."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from support.durable_processes import (
    Cluster,
    count,
    free_port,
    start,
    wait_ready,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer

TOOLS = ("step_one", "step_two", "step_three")


def _ready(base_url: str) -> httpx.Response:
    return httpx.get(f"{base_url}/v1/ready")


def test_an_api_node_is_ready_once_a_worker_is_live_and_keeps_no_local_file(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    nodes = cluster(delay_s=0.0)
    api = nodes.api(postgres_url)
    wait_until(lambda: "schema" not in _ready(nodes.base_url).text, what="the schema migrated")
    alone = _ready(nodes.base_url)
    local_files = [path.name for path in nodes.directory.iterdir()
                   if path.suffix not in (".toml", ".py", ".log") and path.is_file()]
    nodes.start("worker", ["worker", "--config", str(nodes.config), "--db", postgres_url])
    wait_ready(api, nodes.base_url, nodes.log("api"))
    with_worker = _ready(nodes.base_url)
    nodes.close()
    assert alone.status_code == 503
    assert alone.headers["retry-after"] == "2"
    body = alone.json()
    assert body["ready"] is False and body["error"] == "not_ready"
    assert [problem.split(":")[0] for problem in body["missing"]] == ["workers"], body
    assert with_worker.status_code == 200 and with_worker.json() == {"ready": True}
    assert "store: PostgresDurableStore(" in nodes.log("api").read_text()
    assert local_files == []  # an API node opens no SQLite file of its own


def test_an_api_node_refuses_a_run_cap_of_its_own(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str
) -> None:
    config = write_config(tmp_path, fake_openai, delay_s=0.0)
    log = tmp_path / "api.log"
    process = start(["serve", "--config", str(config), "--db", postgres_url, "--role", "api",
                     "--port", str(free_port()), "--max-concurrent-runs", "4"], log)
    assert process.wait(timeout=60) == 2
    assert "--max-concurrent-runs is not for --role api" in log.read_text()
    assert "--concurrency" in log.read_text()


def test_nodes_started_at_once_on_a_fresh_database_answer_202_or_503_never_500(
    cluster: Callable[..., Cluster], postgres_url: str
) -> None:
    nodes = cluster(delay_s=0.2)
    tmp_path, base_url, config = nodes.directory, nodes.base_url, nodes.config
    conversations = 6
    answers: list[int] = []
    run_ids: list[str] = []
    lock = threading.Lock()

    def post_until_taken(cid: str) -> None:
        deadline = time.monotonic() + 120
        with httpx.Client(base_url=base_url, timeout=30) as client:
            while time.monotonic() < deadline:
                try:
                    response = client.post(f"/v1/conversations/{cid}/messages",
                                           json={"content": "go"})
                except httpx.TransportError:  # not listening yet
                    time.sleep(0.02)
                    continue
                with lock:
                    answers.append(response.status_code)
                if response.status_code == 202:
                    with lock:
                        run_ids.append(response.json()["run_id"])
                    return
                if response.status_code != 503:
                    return
                time.sleep(0.02)

    posters = [threading.Thread(target=post_until_taken, args=(f"c{i}",), daemon=True)
               for i in range(conversations)]
    for poster in posters:
        poster.start()
    nodes.start("api", ["serve", "--config", str(config), "--db", postgres_url,
                        "--role", "api", "--port", str(nodes.port)])
    for name in ("w1", "w2"):
        nodes.start(name, ["worker", "--config", str(config), "--db", postgres_url,
                           "--concurrency", "2", "--executor-id", name])
    for poster in posters:
        poster.join(150)
    runs = nodes.wait_ended(run_ids)
    nodes.close()
    assert set(answers) <= {202, 503}, answers
    assert len(run_ids) == conversations, (answers, nodes.log("api").read_text())
    assert [r["status"] for r in runs] == ["succeeded"] * conversations, runs
    assert [count(tmp_path, name, "finished") for name in TOOLS] == [conversations] * 3
