"""An operator's view of a cluster (two workers, an API node): ``/metrics`` counts what
happened, each run logs a JSON line as it starts and ends, and spans reach an OTLP
receiver nested as the work was, from the API node's submission to a tool's own span."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.durable_processes import (
    answer_every_run,
    free_port,
    start,
    stop,
    wait_for_line,
    wait_healthy,
    wait_until,
    write_config,
)
from support.fake_openai import FakeOpenAIServer
from support.otlp_receiver import OTLPReceiver, ReceivedSpan

RUNS = 4
TOOLS = ("step_one", "step_two", "step_three")

#: The test's tools trace their own work with the OpenTelemetry API, as a user's would.
TRACED_TOOLS = '''
from opentelemetry import trace as _trace

_untraced_step = _step


def _step(name, x):
    with _trace.get_tracer("tests.tools").start_as_current_span(f"{name}.work"):
        return _untraced_step(name, x)
'''


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    receiver = OTLPReceiver()
    yield receiver
    receiver.close()


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of metric ``name`` (a counter's ``_total``) in an exposition."""
    return [(dict(s.labels), s.value) for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == name]


def total(texts: list[str], name: str, **labels: str) -> float:
    return sum(value for text in texts for found, value in samples(text, name)
               if all(found.get(k) == v for k, v in labels.items()))


def json_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines


def test_metrics_logs_and_traces_of_a_cluster(
    tmp_path: Path, fake_openai: FakeOpenAIServer, postgres_url: str,
    receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer_every_run(fake_openai)
    config = write_config(tmp_path, fake_openai, delay_s=0.3)
    with (tmp_path / "tools.py").open("a") as tools:
        tools.write(TRACED_TOOLS)
    with config.open("a") as toml:
        toml.write(f'[telemetry]\notlp_endpoint = "{receiver.endpoint}"\n')
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # spans leave within 0.1 s
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    metrics_ports = {"w1": free_port(), "w2": free_port()}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = {name: tmp_path / f"{name}.log" for name in ("w1", "w2", "api")}
    try:
        for name, metrics_port in metrics_ports.items():
            processes[name] = start(
                ["worker", "--config", str(config), "--db", postgres_url, "--concurrency", "2",
                 "--executor-id", name, "--metrics-port", str(metrics_port),
                 "--log-format", "json"], logs[name])
        for name in metrics_ports:
            wait_for_line(logs[name], "ready", processes[name])
        processes["api"] = start(["serve", "--config", str(config), "--db", postgres_url,
                                  "--role", "api", "--port", str(port), "--log-format", "json"],
                                 logs["api"])
        wait_healthy(processes["api"], base_url, logs["api"])
        run_ids = [httpx.post(f"{base_url}/v1/conversations/c{i}/messages",
                              json={"content": "go"}).json()["run_id"] for i in range(RUNS)]
        during = httpx.get(f"{base_url}/metrics").text  # while the runs are in flight

        def all_ended() -> bool:
            statuses = [httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"]
                        for run_id in run_ids]
            return all(status not in ("queued", "running") for status in statuses)

        wait_until(all_ended, timeout_s=120, what="every run's end")
        workers = [httpx.get(f"http://127.0.0.1:{p}/metrics").text
                   for p in metrics_ports.values()]
        api = httpx.get(f"{base_url}/metrics").text

        def traced(span: ReceivedSpan) -> bool:
            return span.name == "dcbrain.brain.run" and span.role == "worker"

        wait_until(lambda: sum(map(traced, receiver.received())) == RUNS
                   and len([s for s in receiver.received() if s.name.endswith(".work")])
                   == RUNS * len(TOOLS), what="every run's spans at the receiver")
    finally:
        for process in processes.values():
            stop(process)

    # /metrics: the workers counted what they did; the API node sees the cluster.
    assert total(workers, "dcbrain_runs_finished_total", status="succeeded") == RUNS
    assert total(workers, "dcbrain_runs_started_total") == RUNS
    for tool in TOOLS:
        assert total(workers, "dcbrain_tool_calls_total", tool=tool, status="ok") == RUNS
        assert total(workers, "dcbrain_tool_call_duration_seconds_count", tool=tool) == RUNS
    assert total(workers, "dcbrain_llm_calls_total", role="plan", model="fake-model") == RUNS
    assert total(workers, "dcbrain_llm_tokens_total", kind="completion") > 0
    assert total(workers, "dcbrain_plan_duration_seconds_count") == RUNS
    assert total([during], "dcbrain_workers_live") == 2
    assert total([api], "dcbrain_queue_depth") == 0
    assert total([api], "dcbrain_sse_streams") == 0
    assert total([api], "dcbrain_runs_finished_total") == 0  # the workers ran them

    # One JSON line per run as it started and as it ended, naming the worker.
    lines = json_lines(logs["w1"]) + json_lines(logs["w2"])
    for run_id in run_ids:
        started = [line for line in lines
                   if line.get("run_id") == run_id and line["message"] == "run started"]
        ended = [line for line in lines
                 if line.get("run_id") == run_id and line["message"].startswith("run ended")]
        assert len(started) == len(ended) == 1, (run_id, lines)
        assert ended[0]["status"] == "succeeded" and ended[0]["reason"] == "validated"
        assert ended[0]["duration_s"] > 0 and ended[0]["level"] == "info"
        assert ended[0]["worker"] in ("w1", "w2") and ended[0]["conversation_id"].startswith("c")
        assert ended[0]["ts"].endswith("Z")

    # Spans: the worker's run continues the API node's submission; a tool's own span
    # nests under its call; the LLM calls are in the run's trace.
    spans = receiver.received()
    by_id = {span.span_id: span for span in spans}
    for run_id in run_ids:
        [submitted] = [s for s in spans if s.name == "dcbrain.run.submit"
                       and s.attributes["dcbrain.run_id"] == run_id]
        assert submitted.role == "serve"
        [run] = [s for s in spans if traced(s) and s.attributes["dcbrain.run_id"] == run_id]
        assert run.parent_span_id == submitted.span_id
        assert run.trace_id == submitted.trace_id
        in_run = [s for s in spans if s.trace_id == run.trace_id]
        for tool in TOOLS:
            [work] = [s for s in in_run if s.name == f"{tool}.work"]
            assert by_id[work.parent_span_id].name == f"tool {tool}"
        assert any(s.name == "chat fake-model" for s in in_run)
