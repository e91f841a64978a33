"""A client that follows a run's events to ``final`` reads the run as ``final`` told it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from support.server_app import Api, BrainScripts, ServeFn, direct_brain

RUNS = 200
CLIENTS = 8


def follow_then_read(api: Api, conversation_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send a message, follow its stream to ``final`` (not its ``end``), read the run at
    once."""
    run_id = api.send(conversation_id, "hi")
    stream = api.stream(run_id, until=lambda event: event["type"] == "final")
    final = stream.events[-1]
    assert final["type"] == "final"
    run: dict[str, Any] = api.http.get(f"/v1/runs/{run_id}").json()
    return {**final, "event_count": len(stream.events)}, run


def test_the_run_record_agrees_with_its_final_event_at_once_under_load(
    serve: ServeFn, brains: BrainScripts
) -> None:
    brains.always(lambda memory: direct_brain(memory, "hello"))
    with serve(max_concurrent_runs=RUNS) as api, \
            ThreadPoolExecutor(CLIENTS) as clients:
        seen = list(clients.map(lambda i: follow_then_read(api, f"c{i}"), range(RUNS)))
    for final, run in seen:
        assert run["status"] == final["status"] == "succeeded", run
        assert run["reason"] == final["reason"] == "direct_answer"
        assert run["result"] is not None and run["result"]["final_result"] == "hello"
        assert run["event_count"] == final["event_count"]
