"""``GET /metrics`` of a server: its runs counted from their events, read like the API."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.server import ServerSettings, create_app
from dcbrain.server.metrics import Metrics, serve_metrics
from support.server_app import Api, BrainScripts, replanning_brain, served_api


@contextmanager
def metered(brains: BrainScripts, memory: SQLiteMemory, *, token: str | None,
            open_metrics: bool = False) -> Iterator[Api]:
    app = create_app(Runtime(store=memory, brains=brains), ServerSettings(api_token=token))
    stop_counting = serve_metrics(app, Metrics(), token=token, open_metrics=open_metrics)
    try:
        with served_api(app, token) as api:
            yield api
    finally:
        stop_counting()


def value(text: str, name: str, **labels: str) -> float:
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == name
               and all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_count_the_servers_runs_and_calls(brains: BrainScripts,
                                                  memory: SQLiteMemory) -> None:
    brains.then(replanning_brain)
    with metered(brains, memory, token=None) as api:
        run = api.wait_for(api.send("trip-1", "What is 2+3+1?"))
        response = api.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    text = response.text
    assert run["status"] == "succeeded"
    assert value(text, "dcbrain_runs_finished_total", status="succeeded",
                 reason="validated") == 1
    assert value(text, "dcbrain_run_duration_seconds_count", status="succeeded") == 1
    assert value(text, "dcbrain_plan_duration_seconds_count") == 2  # it replanned once
    assert value(text, "dcbrain_tool_calls_total", tool="add", status="ok") >= 1
    assert value(text, "dcbrain_llm_calls_total", role="plan", status="ok") == 2
    assert value(text, "dcbrain_llm_tokens_total", role="plan", kind="prompt") > 0
    assert value(text, "dcbrain_runs_active") == 0
    assert value(text, "dcbrain_sse_streams") == 0
    assert value(text, "dcbrain_sandbox_workers") >= 1  # the plans ran in the sandbox


def test_metrics_take_the_api_token_unless_configured_open(brains: BrainScripts,
                                                           memory: SQLiteMemory) -> None:
    with metered(brains, memory, token="s3cret") as api:
        anonymous = httpx.get(f"{api.base_url}/metrics")
        wrong = httpx.get(f"{api.base_url}/metrics", headers={"Authorization": "Bearer nope"})
        allowed = api.http.get("/metrics")
    assert (anonymous.status_code, wrong.status_code, allowed.status_code) == (401, 401, 200)
    assert anonymous.json()["error"] == "unauthorized"
    with metered(brains, memory, token="s3cret", open_metrics=True) as api:
        assert httpx.get(f"{api.base_url}/metrics").status_code == 200
