"""Durable runs at scale, offline: workers on a private PostgreSQL, the API node in this process.

    python benchmarks/scaleout.py [--runs 40] [--in-flight 1000] [--only NAME ...]

Needs ``pip install -e ".[durable]"`` and Debian's PostgreSQL binaries (``initdb``).
Every LLM is fake (an OpenAI-compatible server on loopback, or a FunctionLLM); tools,
workers (``dcbrain worker`` processes), DBOS, PostgreSQL/SQLite and SSE are real.

- ``throughput``: N runs, each a plan of three 0.5 s tools, with 1 then 2 workers
  (``--concurrency 5`` each): runs/s and the ratio (goal >= 1.8x); event latency p50/p95
  from the worker's emit to the SSE client (goal p95 <= 100 ms).
- ``checkpoint``: a plan of 50 fast tool calls, durable vs a plain in-process run, on
  PostgreSQL and SQLite: the added time per call (goal <= 5 ms on PostgreSQL).
- ``resume``: ``dcbrain serve`` (SQLite) SIGKILLed during a 1 s tool, then restarted:
  restart -> serving, -> the interrupted tool running again, -> run succeeded.
- ``abort``: a run on a worker process aborted through the API node during a 5 s tool:
  request -> final event at the SSE client (goal <= 0.5 s).
- ``takeover``: two workers, one SIGKILLed mid-run: kill -> its runs running on the
  other worker (heartbeats; goal <= 10 s), -> all done.
- ``inflight``: N runs at once on one worker (four LLM calls of 0.5 s each: plan,
  rejected, plan, accepted), followed through the event hub: most runs in flight at
  once and event latency p50/p95 (goal p95 <= 250 ms at 1,000).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from dcbrain import DCBrain, FunctionLLM, SQLiteMemory  # noqa: E402
from dcbrain.durable import (  # noqa: E402
    DurableEngine,
    DurableStore,
    EventHub,
    PostgresDurableStore,
    RunExecutor,
    SQLiteDurableStore,
)
from dcbrain.durable._urls import sqlite_url  # noqa: E402
from dcbrain.durable.testing import fresh_database, postgres_bindir, private_postgres  # noqa: E402
from support.durable_processes import (  # noqa: E402
    answer_every_run,
    free_port,
    start,
    stop,
    wait_healthy,
    write_config,
)
from support.fake_openai import FakeOpenAIServer  # noqa: E402
from support.server_app import sse_messages  # noqa: E402

TERMINAL = {"succeeded", "failed", "aborted", "interrupted"}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def starts(counters: Path, name: str) -> list[float]:
    path = counters / f"{name}.started"
    lines = path.read_text().splitlines() if path.exists() else []
    return [float(line.split()[0]) for line in lines]  # "<time> <pid>"


@contextmanager
def workers(count: int, config: Path, db: str, logs: Path,
            concurrency: int) -> Iterator[list[Any]]:
    processes = [start(["worker", "--config", str(config), "--db", db, "--concurrency",
                        str(concurrency), "--executor-id", f"w{i}"], logs / f"w{i}.log")
                 for i in range(count)]
    try:
        for i, process in enumerate(processes):
            log = logs / f"w{i}.log"
            while "ready" not in (log.read_text() if log.exists() else ""):
                if process.poll() is not None:
                    raise RuntimeError(log.read_text())
                time.sleep(0.05)
        yield processes
    finally:
        for process in processes:
            stop(process)


@contextmanager
def api_node(db: str, config: Path, directory: Path) -> Iterator[str]:
    """An API-only node (``dcbrain serve --role api``) in a process of its own, on loopback.

    Not in this process: here its event delivery would share one GIL with the fake LLM
    server and every reader, and slow the runs down as their number grows.
    """
    port = free_port()
    log = directory / "api.log"
    process = start(["serve", "--config", str(config), "--db", db, "--role", "api",
                     "--port", str(port)], log)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, base_url, log)
        yield base_url
    finally:
        stop(process)


def follow(client: httpx.Client, index: int) -> tuple[str, list[float], tuple[float, float]]:
    """Post a question as conversation ``bench-<index>`` and read its run's events:
    the run's status, each event's latency, and the times of its first and last events."""
    latencies: list[float] = []
    times: list[float] = []
    status = ""
    response = client.post(f"/v1/conversations/bench-{index}/messages",
                           json={"content": "count"})
    response.raise_for_status()
    run_id = response.json()["run_id"]
    with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        for message in sse_messages(stream):
            if message.event == "end":
                status = message.data["status"]
                break
            times.append(float(message.data["ts"]))
            latencies.append(time.time() - times[-1])
    return status, latencies, (min(times, default=0.0), max(times, default=0.0))


# -- throughput ----------------------------------------------------------------------------

def throughput(pg: str, llm: FakeOpenAIServer, runs: int) -> None:
    rates: dict[int, float] = {}
    for count in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            db = fresh_database(pg)
            config = write_config(directory, llm, delay_s=0.5)
            with workers(count, config, db, directory, concurrency=5), \
                    api_node(db, config, directory) as base_url:
                # One client for every reader (made before the clock starts: building one
                # per reader costs the benchmark process more than the runs' own work).
                limits = httpx.Limits(max_connections=runs + 10)
                with httpx.Client(base_url=base_url, timeout=120, limits=limits) as client, \
                        ThreadPoolExecutor(runs) as pool:
                    started, wall_started = time.monotonic(), time.time()
                    results = list(pool.map(lambda i: follow(client, i), range(runs)))
                    wall = time.monotonic() - started
        statuses = [status for status, _, _ in results]
        latencies = [lat for _, lats, _ in results for lat in lats]
        spans = [span for _, _, span in results]
        rates[count] = runs / wall
        print(f"throughput  {count} worker(s) x 5: {runs} runs in {wall:.2f} s = "
              f"{rates[count]:.2f} runs/s; succeeded {statuses.count('succeeded')}/{runs}; "
              f"event latency worker->SSE p50 {ms(pct(latencies, 0.5))} "
              f"p95 {ms(pct(latencies, 0.95))} (goal p95 <= 100 ms)")
        took = statistics.median(end - start for start, end in spans)
        print(f"throughput  {count} worker(s): a run takes {took:.2f} s "
              f"(median, first -> last event); first run started after "
              f"{ms(min(s for s, _ in spans) - wall_started)}, the last ended "
              f"{ms(wall_started + wall - max(e for _, e in spans))} before the clock stopped")
    print(f"throughput  2 vs 1 worker: {rates[2] / rates[1]:.2f}x (goal >= 1.8x)")


# -- checkpoint overhead -------------------------------------------------------------------

CALLS = 50
LOOP_PLAN = f"x = 0\nfor i in range({CALLS}):\n    x = inc(x=x)\nreturn x"


def inc(x: int) -> int:
    """Add one."""
    return x + 1


def loop_brain() -> DCBrain:
    async def planner(messages: list[dict[str, Any]]) -> str:
        return f"```tf_plan\n{LOOP_PLAN}\n```"

    async def validator(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"is_solved": True, "suggestion": ""}

    return DCBrain(default_llm=FunctionLLM(planner),
                   default_validate_llm=FunctionLLM(validator), tools=[inc])


def run_span(store: DurableStore, run_id: str) -> float:
    events = store.events(run_id)
    return float(events[-1]["ts"]) - float(events[0]["ts"])


def submit_and_wait(engine: DurableEngine, store: DurableStore, cid: str,
                    timeout_s: float = 120) -> str:
    run_id = uuid.uuid4().hex
    store.save_run(run_id, cid, "queued", {"question": "loop"})
    engine.enqueue(run_id, cid, "loop")
    deadline = time.monotonic() + timeout_s
    while True:
        record = store.get_run(run_id)
        if record is not None and record.status in TERMINAL:
            return run_id
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} did not end")
        time.sleep(0.01)


def checkpoint(pg: str, repeats: int = 5) -> None:
    plain = []
    for _ in range(repeats):  # the same span as below: run_started -> final
        events = asyncio.run(loop_brain().async_run("loop")).events
        plain.append(float(events[-1]["ts"]) - float(events[0]["ts"]))
    base = statistics.median(plain)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        memory = SQLiteMemory(directory / "server.db")
        pg_db = fresh_database(pg)
        backends: list[tuple[str, str, DurableStore]] = [
            ("PostgreSQL", pg_db, PostgresDurableStore(pg_db)),
            ("SQLite", sqlite_url(directory / "dbos.sqlite"),
             SQLiteDurableStore(memory, directory / "journal.sqlite")),
        ]
        for name, url, store in backends:
            engine = DurableEngine(url, store, app_version="bench",
                                   executor=RunExecutor(store, loop_brain))
            engine.start()
            try:
                spans = [run_span(store, submit_and_wait(engine, store, f"c{i}"))
                         for i in range(repeats)]
            finally:
                engine.stop()
                store.close()
            durable = statistics.median(spans)
            print(f"checkpoint  {name}: run of {CALLS} tool calls {durable * 1000:.0f} ms "
                  f"durable vs {base * 1000:.0f} ms in-process: "
                  f"{(durable - base) / CALLS * 1000:+.1f} ms per call (goal <= 5 ms on "
                  f"PostgreSQL)")
        memory.close()


# -- resume after SIGKILL ------------------------------------------------------------------

def resume(llm: FakeOpenAIServer) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = write_config(directory, llm, delay_s=1.0)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        args = ["serve", "--config", str(config), "--port", str(port)]
        log = directory / "serve.log"
        first = start(args, log)
        wait_healthy(first, base_url, log)
        run_id = httpx.post(f"{base_url}/v1/conversations/c/messages",
                            json={"content": "go"}).json()["run_id"]
        counters = directory / "counters"
        while not starts(counters, "step_two"):
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait()
        restarted = time.time()
        second = start(args, log)
        try:
            wait_healthy(second, base_url, log)
            serving = time.time()
            while httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"] not in TERMINAL:
                time.sleep(0.02)
            done = time.time()
            status = httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"]
        finally:
            stop(second)
        again = [t for t in starts(counters, "step_two") if t > restarted]
        repeated = [name for name in ("step_one", "step_two", "step_three")
                    for t in starts(counters, name) if t > restarted]
        print(f"resume      SQLite serve, SIGKILL in a 1 s tool: restart -> serving "
              f"{serving - restarted:.2f} s, -> tool running again "
              f"{(again[0] - restarted) if again else float('nan'):.2f} s, -> {status} "
              f"{done - restarted:.2f} s (includes the 1 s tool and the rest of the plan); "
              f"calls after the restart: {', '.join(repeated)} (step_one had finished)")


# -- a dead worker's runs ------------------------------------------------------------------

def takeover(pg: str, llm: FakeOpenAIServer) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        db = fresh_database(pg)
        config = write_config(directory, llm, delay_s=1.0)
        counters = directory / "counters"
        with workers(2, config, db, directory, concurrency=4) as processes, \
                api_node(db, config, directory) as base_url:
            run_ids = [httpx.post(f"{base_url}/v1/conversations/t{i}/messages",
                                  json={"content": "go"}).json()["run_id"] for i in range(4)]
            store = PostgresDurableStore(db)

            def running_on(executor_id: str) -> list[str]:
                return [r.run_id for r in store.list_runs() if r.status == "running"
                        and r.data.get("executor_id") == executor_id]

            # The victim is whichever worker is in the middle of a run (the queue may
            # have given every run to one of them).
            while not starts(counters, "step_two"):
                time.sleep(0.02)
            while not (victims := running_on("w0")) and not running_on("w1"):
                time.sleep(0.02)
            dead, alive = ("w0", "w1") if victims else ("w1", "w0")
            victims = victims or running_on("w1")
            processes[int(dead[1:])].send_signal(signal.SIGKILL)
            processes[int(dead[1:])].wait()
            killed = time.time()
            taken = None
            while True:
                records = [store.get_run(run_id) for run_id in victims]
                if taken is None and any(r is not None and r.data.get("executor_id") == alive
                                         for r in records):
                    taken = time.time() - killed
                if all(store.get_run(run_id).status in TERMINAL  # type: ignore[union-attr]
                       for run_id in run_ids):
                    break
                time.sleep(0.05)
            done = time.time() - killed
            statuses = [store.get_run(r).status for r in run_ids]  # type: ignore[union-attr]
            store.close()
        print(f"takeover    2 workers, one SIGKILLed with {len(victims)} run(s): kill -> runs "
              f"on the other worker {taken:.1f} s (goal <= 10 s), -> all ended {done:.1f} s; "
              f"{statuses.count('succeeded')}/{len(run_ids)} succeeded")


# -- abort across processes ---------------------------------------------------------------

def abort(pg: str, llm: FakeOpenAIServer, repeats: int = 5) -> None:
    delays: list[float] = []
    posted: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        db = fresh_database(pg)
        config = write_config(directory, llm, delay_s=5.0)
        with workers(1, config, db, directory, concurrency=4), \
                api_node(db, config, directory) as base_url, \
                httpx.Client(base_url=base_url, timeout=60) as client:
            for i in range(repeats):
                run_id = client.post(f"/v1/conversations/a{i}/messages",
                                     json={"content": "go"}).json()["run_id"]
                with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
                    asked = 0.0
                    for message in sse_messages(stream):
                        data = message.data
                        if (data.get("type") == "call_started" and data.get("kind") == "tool"
                                and not asked):
                            asked = time.monotonic()  # a 5 s tool is running on the worker
                            client.post(f"/v1/runs/{run_id}/abort", json={}).raise_for_status()
                            posted.append(time.monotonic() - asked)
                        if data.get("type") == "final":
                            delays.append(time.monotonic() - asked)
                            break
    print(f"abort       API node -> worker, during a 5 s tool: request -> final event at "
          f"the SSE client p50 {ms(pct(delays, 0.5))} max {ms(max(delays))} "
          f"(goal <= 500 ms); all: {[round(d * 1000) for d in delays]}, "
          f"of which the abort request: {[round(d * 1000) for d in posted]}")


# -- many runs in flight on one worker -----------------------------------------------------

def _inflight_brain() -> DCBrain:
    """Plan, rejected, plan again, accepted: four 0.5 s LLM calls."""
    verdicts = iter([False, True])
    attempts = iter(range(1, 1_000))

    async def planner(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(0.5)  # a new plan each time: a repeated plan is refused
        return f"```tf_plan\nreturn inc(x={next(attempts)})\n```"

    async def validator(messages: list[dict[str, Any]]) -> dict[str, Any]:
        await asyncio.sleep(0.5)
        return {"is_solved": next(verdicts, True), "suggestion": "again"}

    return DCBrain(default_llm=FunctionLLM(planner),
                   default_validate_llm=FunctionLLM(validator), tools=[inc])


def _api_side(db: str, count: int, out: Connection) -> None:
    """An API node in a process of its own: enqueue ``count`` runs, follow them all."""
    store = PostgresDurableStore(db, max_connections=16)
    engine = DurableEngine(db, store, app_version="bench")  # a DBOS client, no brain
    engine.start()
    hub = EventHub(store, listen_url=db)
    latencies: list[float] = []
    spans: list[tuple[float, float]] = []

    async def main() -> tuple[list[str], float]:
        await hub.start()
        run_ids = [uuid.uuid4().hex for _ in range(count)]

        def submit(i: int) -> None:
            store.save_run(run_ids[i], f"f{i}", "queued", {"question": "one"})
            engine.enqueue(run_ids[i], f"f{i}", "one")

        def submit_all() -> None:
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(submit, range(count)))

        async def watch(run_id: str) -> str:
            first = last = 0.0
            status = ""
            async for event in hub.follow(run_id):
                latencies.append(time.time() - float(event["ts"]))
                first = first or float(event["ts"])
                last = float(event["ts"])
                status = str(event.get("status", ""))
            spans.append((first, last))
            return status

        watchers = [asyncio.create_task(watch(run_id)) for run_id in run_ids]
        submitted = time.monotonic()
        await asyncio.to_thread(submit_all)
        enqueued = time.monotonic() - submitted
        statuses = await asyncio.gather(*watchers)
        await hub.close()
        return statuses, enqueued

    try:
        statuses, enqueued = asyncio.run(main())
    finally:
        engine.stop()
        store.close()
    out.send((statuses, enqueued, latencies, spans))


def inflight(pg: str, count: int) -> None:
    """One worker (this process) and one API node (a child process) on PostgreSQL."""
    db = fresh_database(pg)
    store = PostgresDurableStore(db, max_connections=16)
    engine = DurableEngine(db, store, app_version="bench",
                           executor=RunExecutor(store, _inflight_brain), concurrency=count)
    engine.start()
    receiver, sender = multiprocessing.get_context("spawn").Pipe(duplex=False)
    api = multiprocessing.get_context("spawn").Process(target=_api_side,
                                                       args=(db, count, sender))
    started, cpu = time.monotonic(), time.process_time()
    api.start()
    try:
        statuses, enqueued, latencies, spans = receiver.recv()
        cpu = time.process_time() - cpu
        api.join()
    finally:
        if api.is_alive():
            api.kill()
        engine.stop()
        store.close()
    wall = time.monotonic() - started
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = level = 0
    for _, step in points:
        level += step
        most = max(most, level)
    others = Counter(status for status in statuses if status != "succeeded")
    durations = [last - first for first, last in spans]
    origin = min(first for first, _ in spans)
    print(f"inflight    {count} runs on one worker (LLM 0.5 s), followed from an API process: "
          f"{wall:.1f} s, at most {most} in flight, {statuses.count('succeeded')}/{count} "
          f"succeeded {dict(others)}; event latency p50 {ms(pct(latencies, 0.5))} "
          f"p95 {ms(pct(latencies, 0.95))} (goal p95 <= 250 ms)")
    print(f"inflight    run first->final event p50 {ms(pct(durations, 0.5))} "
          f"p95 {ms(pct(durations, 0.95))} (four 0.5 s LLM calls: 2 s at best); first events "
          f"over {ms(max(first for first, _ in spans) - origin)}; all enqueued in "
          f"{ms(enqueued)}; worker CPU {cpu * 1000 / count:.1f} ms per run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--in-flight", type=int, default=1000)
    parser.add_argument("--only", nargs="*", default=None,
                        choices=["throughput", "checkpoint", "resume", "abort", "takeover",
                                 "inflight"])
    args = parser.parse_args()
    bindir = postgres_bindir()
    if bindir is None:
        sys.exit("PostgreSQL binaries not found (apt-get install postgresql)")

    def wanted(name: str) -> bool:
        return args.only is None or name in args.only

    with private_postgres(bindir, max_connections=500) as pg, FakeOpenAIServer() as llm:
        answer_every_run(llm)
        if wanted("checkpoint"):
            checkpoint(pg)
        if wanted("resume"):
            resume(llm)
        if wanted("throughput"):
            throughput(pg, llm, args.runs)
        if wanted("abort"):
            abort(pg, llm)
        if wanted("takeover"):
            takeover(pg, llm)
        if wanted("inflight"):
            inflight(pg, args.in_flight)


if __name__ == "__main__":
    main()
