"""Operations leak nothing: ``/metrics`` has bounded labels (no run ids, no unbounded names),
error bodies carry no traceback, local path or database password, and admin routes and
``/metrics`` need the token."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.events import Event, LLMCallFinished, PlanCallFinished
from dcbrain.server import ServerSettings, create_app
from dcbrain.server.metrics import MAX_SERIES_PER_METRIC, OTHER, Metrics, serve_metrics
from dcbrain.server.testing import serve_in_thread
from support.server_app import Api, BrainScripts, replanning_brain

TOKEN = "s3cret-token"


def series(text: str, name: str) -> list[dict[str, str]]:
    return [sample.labels for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == name]


def test_metric_labels_stay_bounded_whatever_names_runs_report() -> None:
    metrics = Metrics()
    for i in range(MAX_SERIES_PER_METRIC * 3):
        metrics.observe(Event(PlanCallFinished(
            call_id="c", kind="tool", name=f"tool_{i}_" + "x" * 500, status="ok",
            duration_s=0.1, reused=False, line=1, col=1, path=""), run_id=f"{i:032x}"))
        metrics.observe(Event(LLMCallFinished(
            call_id="l", name="chat", status="ok", duration_s=0.1, model=f"model-{i}",
            phase="plan", prompt_tokens=1, completion_tokens=1, total_tokens=2)))
    text = metrics.exposition().decode()
    tools = series(text, "dcbrain_tool_calls_total")
    assert len(tools) <= MAX_SERIES_PER_METRIC + 1
    assert any(labels["tool"] == OTHER for labels in tools)
    assert all(len(labels["tool"]) <= 128 for labels in tools)
    assert sum(1 for _ in series(text, "dcbrain_llm_calls_total")) <= MAX_SERIES_PER_METRIC + 1
    assert f"{5:032x}" not in text
    # every call is still counted, under "other" past the cap
    total = sum(s.value for family in text_string_to_metric_families(text)
                for s in family.samples if s.name == "dcbrain_tool_calls_total")
    assert total == MAX_SERIES_PER_METRIC * 3


def test_metrics_and_admin_routes_need_the_token_and_show_no_run_id(
    brains: BrainScripts, memory: SQLiteMemory
) -> None:
    brains.then(replanning_brain)
    app = create_app(Runtime(store=memory, brains=brains), ServerSettings(api_token=TOKEN))
    stop = serve_metrics(app, Metrics(), token=TOKEN, open_metrics=False)
    try:
        with serve_in_thread(app) as base_url:
            api = Api(base_url, TOKEN)
            run_id = api.send("c1", "What is 2+3+1?")
            api.wait_for(run_id)
            with httpx.Client(base_url=base_url) as anonymous:
                refused = [anonymous.get("/metrics"),
                           anonymous.get("/metrics", headers={"Authorization": "Bearer x"}),
                           anonymous.get("/v1/runs"),
                           anonymous.post("/v1/runs/prune", json={"older_than": "1d"}),
                           anonymous.post(f"/v1/runs/{run_id}/resume", json={}),
                           anonymous.post(f"/v1/runs/{run_id}/cancel", json={})]
            text = api.http.get("/metrics").text
            api.http.close()
    finally:
        stop()
    assert [r.status_code for r in refused] == [401] * len(refused)
    assert run_id not in text and "c1" not in text and TOKEN not in text


@pytest.mark.parametrize("body", [b"{", b'{"content": "' + b"[" * 100_000 + b'"}',
                                  b"\xff\xfe"])
def test_error_bodies_carry_no_traceback_or_local_path(
    brains: BrainScripts, memory: SQLiteMemory, body: bytes
) -> None:
    app = create_app(Runtime(store=memory, brains=brains))
    with serve_in_thread(app) as base_url, httpx.Client(base_url=base_url) as client:
        answers = [
            client.post("/v1/conversations/c1/messages", content=body,
                        headers={"Content-Type": "application/json"}),
            client.get("/v1/runs/" + "0" * 32),
            client.get("/v1/runs", params={"cursor": "../../etc/passwd"}),
            client.get("/static/../../../etc/passwd"),
            client.get("/static/%2e%2e/app.py"),
            client.delete("/v1/runs"),
        ]
    for answer in answers:
        assert 400 <= answer.status_code < 500, answer.text
        text = answer.text
        assert "Traceback" not in text and 'File "' not in text
        assert "/src/dcbrain" not in text and str(memory.path) not in text
        assert "site-packages" not in text


def test_a_workers_metrics_port_asks_for_the_token() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics = Metrics()
    stop = metrics.serve(port, "127.0.0.1", token=TOKEN)
    try:
        base = f"http://127.0.0.1:{port}"
        anonymous = httpx.get(f"{base}/metrics")
        wrong = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer nope"})
        allowed = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        stop()
    assert (anonymous.status_code, wrong.status_code, allowed.status_code) == (401, 401, 200)
    assert "dcbrain_runs_started_total" in allowed.text and TOKEN not in anonymous.text
    stop = Metrics().serve(port, "127.0.0.1")
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 200
    finally:
        stop()
