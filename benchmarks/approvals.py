"""Human approval: what a waiting run holds, and how soon an approved call starts.

    python benchmarks/approvals.py [--runs 200] [--latency-runs 10] [--only NAME ...]

- ``waiting``: ``--runs`` runs at once whose plans stop at a call needing approval, on one
  process that executes them: durable runs (a worker in this process, SQLite and a
  private PostgreSQL) and in-process brain runs (an ``ApprovalBoard``). The process's
  threads and RSS before the runs and once all of them wait, and what that is per run.
- ``latency``: a durable server (API + worker in this process, SQLite and PostgreSQL):
  time from the approval POST to the approved tool starting, p50 and max over
  ``--latency-runs`` runs.

Every LLM is scripted; tools, DBOS, SQLite/PostgreSQL, HTTP are real.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from dcbrain import DCBrain, FunctionLLM, SQLiteMemory  # noqa: E402
from dcbrain.durable import (  # noqa: E402
    DurableStore,
    PostgresDurableStore,
    SQLiteDurableStore,
)
from dcbrain.durable._urls import sqlite_url  # noqa: E402
from dcbrain.durable.testing import fresh_database, postgres_bindir, private_postgres  # noqa: E402
from dcbrain.tools import Tool  # noqa: E402
from support.durable_harness import (  # noqa: E402
    Backend,
    durable_server,
    running_engine,
    submit,
)

PLAN = "a = count(x=1)\nreturn pay(amount=a * 10)"


class Calls:
    """The two tools; ``pay`` needs approval and notes when each of its calls starts."""

    def __init__(self) -> None:
        self.pay_started: list[float] = []
        self._lock = threading.Lock()

    def tools(self) -> list[Any]:
        def count(x: int) -> int:
            """Count."""
            return x + 1

        def pay(amount: int) -> str:
            """Pay ``amount``."""
            with self._lock:
                self.pay_started.append(time.perf_counter())
            return f"paid {amount}"

        return [Tool(count), Tool(pay, requires_approval=True)]

    def brain(self, memory: Any = None) -> DCBrain:
        def planner(messages: list[Any]) -> str:
            return f"```tf_plan\n{PLAN}\n```"

        def validator(messages: list[Any]) -> dict[str, Any]:
            return {"is_solved": True, "suggestion": ""}

        return DCBrain(default_llm=FunctionLLM(planner),
                       default_validate_llm=FunctionLLM(validator), tools=self.tools(),
                       memory=memory, isolation="process")


def process_state() -> tuple[int, float]:
    """OS threads of this process and its RSS in MiB."""
    gc.collect()
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text()
                  .splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


@contextmanager
def backends(only_sqlite: bool) -> Iterator[list[Backend]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        runs = SQLiteMemory(path / "runs.db")
        found = [Backend("sqlite", sqlite_url(path / "dbos.sqlite"),
                         SQLiteDurableStore(runs, path / "journal.db"))]
        bindir = postgres_bindir()
        if only_sqlite or bindir is None:
            yield found
            return
        with private_postgres(bindir) as server:
            url = fresh_database(server)
            store: DurableStore = PostgresDurableStore(url)
            found.append(Backend("postgres", url, store))
            yield found


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not reached in {timeout_s} s")
        time.sleep(0.05)


def waiting_durable(backend: Backend, runs: int) -> None:
    """Two batches on one worker, ``runs // 4`` then ``runs``: thread pools grown by the
    first show what the second adds per run."""
    calls = Calls()
    with running_engine(backend, calls.brain, concurrency=16) as engine:
        calls.brain().warm_up()
        time.sleep(1.0)
        for batch, size in enumerate((runs // 4, runs)):
            threads, rss = process_state()
            ids = [submit(engine, backend.store, f"b{batch}c{i}", "pay") for i in range(size)]

            def all_waiting(ids: list[str] = ids) -> bool:
                return all((r := backend.store.get_run(i)) is not None
                           and r.status == "waiting" for i in ids)

            started = time.perf_counter()
            wait_for(all_waiting, 600, f"{size} runs waiting")
            took = time.perf_counter() - started
            time.sleep(1.0)
            threads_after, rss_after = process_state()
            report(f"durable {backend.name}", size, took, threads, rss, threads_after,
                   rss_after)


def waiting_in_process(runs: int) -> None:
    calls = Calls()
    brain = calls.brain()
    brain.warm_up()

    async def main() -> None:
        threads, rss = process_state()
        started = time.perf_counter()
        tasks = [asyncio.create_task(brain.async_run("pay", conversation_id=f"c{i}"))
                 for i in range(runs)]
        while len(brain.pending_approvals()) < runs:
            await asyncio.sleep(0.05)
        took = time.perf_counter() - started
        await asyncio.sleep(1.0)
        threads_after, rss_after = process_state()
        report("in-process board", runs, took, threads, rss, threads_after, rss_after)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


def report(name: str, runs: int, took: float, threads: int, rss: float, threads_after: int,
           rss_after: float) -> None:
    print(f"{name:>18}: {runs} runs waiting after {took:.1f} s; threads {threads} -> "
          f"{threads_after} ({threads_after - threads:+d}); RSS {rss:.0f} -> {rss_after:.0f} "
          f"MiB ({(rss_after - rss) * 1024 / runs:+.0f} KiB per waiting run)")


def latency(backend: Backend, runs: int, tmp: Path) -> None:
    calls = Calls()
    memory = SQLiteMemory(tmp / f"{backend.name}-conversations.db")
    delays: list[float] = []
    with durable_server(backend, calls.brain, memory) as api:
        for i in range(runs):
            run_id = api.send(f"l{i}", "pay")
            wait_for(lambda run_id=run_id: api.http.get(f"/v1/runs/{run_id}").json()["status"]
                     == "waiting", 60, "waiting")
            [request] = api.http.get(f"/v1/runs/{run_id}").json()["approvals"]
            before = len(calls.pay_started)
            posted = time.perf_counter()
            response = api.http.post(f"/v1/runs/{run_id}/approvals/{request['call_id']}",
                                     json={"approved": True, "args_hash": request["args_hash"]})
            assert response.status_code == 200, response.text
            wait_for(lambda before=before: len(calls.pay_started) > before, 60,
                     "the approved call")
            delays.append(calls.pay_started[before] - posted)
            api.wait_for(run_id)
    memory.close()
    print(f"{'latency ' + backend.name:>18}: approval POST -> approved call started: "
          f"p50 {statistics.median(delays) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms "
          f"({runs} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--latency-runs", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=["waiting", "latency"])
    parser.add_argument("--sqlite-only", action="store_true")
    args = parser.parse_args()
    if "waiting" in args.only:  # two sizes: what grows with the runs, and what does not
        waiting_in_process(args.runs // 4)
        waiting_in_process(args.runs)
    with backends(args.sqlite_only) as found, tempfile.TemporaryDirectory() as tmp:
        for backend in found:
            if "waiting" in args.only:
                waiting_durable(backend, args.runs)
            if "latency" in args.only:
                latency(backend, args.latency_runs, Path(tmp))


if __name__ == "__main__":
    main()
