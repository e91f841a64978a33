"""The HTTP server under load: many concurrent runs, each followed live over SSE, offline.

    python benchmarks/server.py [--runs N] [--db PATH]

Starts the server on a free loopback port (uvicorn in a thread, a real SQLite file),
then N clients at once each post a message and read the run's event stream to its end.
Every run is a real DCBrain on zero-latency scripted LLMs: plan, rejected by the
validator, revised plan (a diff), accepted — about 40 events. Reports runs per second
(N over the wall time from the first post to the last stream's end), event latency
(arrival at the client minus the event's timestamp; p50/p95/max), and checks that every
event reached its reader and the store, in order.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from dcbrain import Chain, DCBrain, ScriptedLLM, SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.memory import Memory
from dcbrain.server import ServerSettings, create_app
from dcbrain.server.testing import serve_in_thread

FIRST = "total = add(a=2, b=2)\nnote = summarize(text='draft')\nreturn total"
REVISED = "base = add(a=2, b=3)\ntotal = add(a=base, b=1)\nreturn total"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def brain(memory: Memory) -> DCBrain:
    summarize = Chain(name="summarize", description="Summarize a text",
                      llm=ScriptedLLM(["a summary"]), prompt="Summarize: {{ text }}")
    planner = ScriptedLLM([f"```tf_plan\n{FIRST}\n```", f"```tf_plan\n{REVISED}\n```"])
    validator = ScriptedLLM([{"is_solved": False, "suggestion": "add 2 and 3, then 1"},
                             {"is_solved": True, "suggestion": ""}])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   default_validate_llm=validator, tools=[add], memory=memory)


def follow(base_url: str, index: int) -> tuple[str, list[dict[str, Any]], list[float], str]:
    """Post one message and read its stream; returns the events and their latencies."""
    events: list[dict[str, Any]] = []
    latencies: list[float] = []
    status = ""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        response = client.post(f"/v1/conversations/bench-{index}/messages",
                               json={"content": f"What is 2+3+1? (#{index})"})
        response.raise_for_status()
        run_id = response.json()["run_id"]
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            kind, data = "message", ""
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data = line[5:].strip()
                elif line == "" and data:
                    if kind == "end":
                        status = httpx.Response(200, content=data).json()["status"]
                        break
                    event = httpx.Response(200, content=data).json()
                    latencies.append(time.time() - event["ts"])
                    events.append(event)
                    kind, data = "message", ""
    return run_id, events, latencies, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="concurrent runs (default 50)")
    parser.add_argument("--db", type=Path, default=None,
                        help="SQLite file (default: a new one in a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or Path(scratch) / "server.db"
        memory = SQLiteMemory(db)
        app = create_app(Runtime(store=memory, brains=lambda: brain(memory)),
                         ServerSettings(max_concurrent_runs=args.runs,
                                        max_streams_per_client=max(args.runs, 100),
                                        max_streams=max(args.runs, 1000)))
        with serve_in_thread(app) as base_url, ThreadPoolExecutor(args.runs) as pool:
            started = time.perf_counter()
            outcomes = list(pool.map(lambda i: follow(base_url, i), range(args.runs)))
            wall = time.perf_counter() - started
        lost = 0
        for run_id, events, _, status in outcomes:
            stored = [record.event for record in memory.run_events(run_id)]
            in_order = [e["seq"] for e in events] == list(range(len(events)))
            if status != "succeeded" or not in_order or stored != events:
                lost += 1
        memory.close()

    latencies = sorted(latency for outcome in outcomes for latency in outcome[2])
    events_total = len(latencies)
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    print(f"runs:            {args.runs} concurrent, {args.runs - lost} complete, "
          f"{lost} with anything lost")
    print(f"events:          {events_total} ({events_total // max(args.runs, 1)} per run)")
    print(f"throughput:      {args.runs / wall:.1f} runs/s ({wall:.2f} s wall)")
    print(f"event latency:   p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
