"""The pool of sandbox workers: a few workers serve many plans, a killed one fails only its
own plan, and the worker's short way to the host keeps the in-process errors.

Real worker processes throughout.
"""

from __future__ import annotations

import json
import marshal
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dcbrain.tfplan import (
    Interpreter,
    Limits,
    PlanProcessCrashed,
    TFInterpreterError,
    compile_source,
)
from dcbrain.tfplan.sandbox import pool as pool_module
from dcbrain.tfplan.sandbox import relay as relay_module
from dcbrain.tfplan.sandbox import shared_pool
from dcbrain.tfplan.sandbox.pool import POOL_TARGET, Worker, WorkerPool
from dcbrain.tfplan.sandbox.relay import cancel_in_sandbox
from support.sandbox import running_worker
from support.waiting import wait_until

PATIENCE_S = 20.0
MEMORY = Limits().memory_bytes


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerPool]:
    # a plan waits for a worker for as long as it takes: only the pool's rule decides
    monkeypatch.setattr(pool_module, "FREE_WAIT_S", 3600.0)
    own = WorkerPool()
    try:
        yield own
    finally:
        own.close()


def _fill(pool: WorkerPool) -> list[Worker]:
    """Every worker the pool holds before plans wait, all busy."""
    workers = [pool.acquire(MEMORY, patience=3600.0) for _ in range(POOL_TARGET)]
    assert len(pool.busy_pids()) == POOL_TARGET
    return workers


def _acquire_in_thread(pool: WorkerPool) -> tuple[threading.Thread, list[Worker]]:
    got: list[Worker] = []
    thread = threading.Thread(target=lambda: got.append(pool.acquire(MEMORY, patience=3600.0)))
    thread.start()
    return thread, got


def test_a_plan_waits_for_a_computing_worker_instead_of_forking_one(pool: WorkerPool) -> None:
    workers = _fill(pool)
    thread, got = _acquire_in_thread(pool)
    pool.release(workers[1])  # that worker's plan finished
    thread.join(PATIENCE_S)
    assert not thread.is_alive()
    assert got[0].pid == workers[1].pid  # the freed worker serves the next plan
    assert pool.worker_pids() == {worker.pid for worker in workers}
    for worker in [got[0], workers[0], *workers[2:]]:
        pool.release(worker)


def test_a_plan_gets_a_new_worker_when_every_busy_one_waits_on_the_host(
        pool: WorkerPool) -> None:
    workers = _fill(pool)
    for worker in workers:  # each plan has waited long for a model's answer
        worker.in_host_since = time.monotonic() - pool_module.HOST_WAIT_S - 1.0
    thread, got = _acquire_in_thread(pool)
    thread.join(PATIENCE_S)
    assert not thread.is_alive()  # forked at once, not waiting for the others
    assert got[0].pid not in {worker.pid for worker in workers}
    assert len(pool.busy_pids()) == POOL_TARGET + 1
    for worker in [*workers, got[0]]:
        pool.release(worker)
    assert len(pool.worker_pids()) <= POOL_TARGET  # the extra one is not kept idle


def test_a_plan_waiting_behind_another_still_sees_the_busy_workers_stop_computing(
        pool: WorkerPool) -> None:
    # one waiting plan looks again in time for all of them, the others sleep: when it gets
    # a worker, the next one looks from then on
    workers = _fill(pool)
    first, first_got = _acquire_in_thread(pool)
    wait_until(lambda: pool._watcher is not None, what="a plan waiting for a worker")
    second, second_got = _acquire_in_thread(pool)
    wait_until(lambda: len(pool._freed._waiters) == 2,  # type: ignore[attr-defined]
               what="two plans waiting for a worker")
    pool.release(workers[0])
    wait_until(lambda: bool(first_got or second_got), what="the freed worker taken")
    for worker in workers:  # every busy plan has waited long for a model's answer
        worker.in_host_since = time.monotonic() - pool_module.HOST_WAIT_S - 1.0
    for thread in (first, second):
        thread.join(PATIENCE_S)
        assert not thread.is_alive()
    got = [*first_got, *second_got]
    assert sorted(worker.pid == workers[0].pid for worker in got) == [False, True]
    for worker in [*workers[1:], *got]:
        pool.release(worker)


def test_a_waiting_plan_is_released_when_the_pool_closes(pool: WorkerPool) -> None:
    _fill(pool)
    refused: list[BaseException] = []

    def acquire() -> None:
        try:
            pool.acquire(MEMORY, patience=3600.0)
        except RuntimeError as exc:
            refused.append(exc)

    thread = threading.Thread(target=acquire)
    thread.start()
    pool.close()
    thread.join(PATIENCE_S)
    assert not thread.is_alive()  # refused, not left waiting
    assert [str(exc) for exc in refused] == ["the sandbox pool is closed"]


def test_many_concurrent_plans_are_served_by_a_few_workers() -> None:
    seen: set[int] = set()
    lock = threading.Lock()

    def where(i: int) -> int:
        with lock:
            seen.update(shared_pool().busy_pids())
        return i

    interpreter = Interpreter({"where": where})
    interpreter.run("where(i=0)")
    results: list[Any] = []

    def runs(offset: int) -> None:
        for i in range(offset, offset + 10):
            results.append(interpreter.run(f"x = where(i={i})\ny = [x * k for k in range(50)]"
                                           "\ny[1]").value)

    threads = [threading.Thread(target=runs, args=(100 * t,)) for t in range(3 * POOL_TARGET)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE_S * 3)
    assert sorted(results) == sorted(100 * t + i for t in range(3 * POOL_TARGET)
                                     for i in range(10))
    # 120 plans from 12 threads at once; their workers were reused plan after plan
    assert len(seen) < len(results)


def test_a_killed_worker_fails_only_its_own_plan_while_others_share_the_pool() -> None:
    entered = threading.Event()
    outcome: list[BaseException] = []

    def ready() -> str:
        entered.set()
        return "go"

    def doomed() -> None:
        try:
            Interpreter({"ready": ready}, limits=Limits(timeout_s=60, max_operations=10**18)
                        ).run("ready()\nx = 0\nwhile True:\n    x += 1")
        except BaseException as exc:
            outcome.append(exc)

    victim = threading.Thread(target=doomed)
    victim.start()
    assert entered.wait(PATIENCE_S)
    pid = running_worker()
    values: list[int] = []
    interpreter = Interpreter({"double": lambda n: 2 * n})
    others = [threading.Thread(target=lambda t=t: values.extend(
        interpreter.run(f"double(n={10 * t + i})").value for i in range(5)))
        for t in range(2 * POOL_TARGET)]
    for thread in others:
        thread.start()
    os.kill(pid, signal.SIGKILL)
    victim.join(PATIENCE_S)
    for thread in others:
        thread.join(PATIENCE_S * 3)
    assert [type(error) for error in outcome] == [PlanProcessCrashed]
    assert sorted(values) == sorted(2 * (10 * t + i) for t in range(2 * POOL_TARGET)
                                    for i in range(5))
    assert Interpreter().run("'after'").value == "after"


def test_a_cancel_landing_as_the_plan_ends_kills_no_worker_back_in_the_pool(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's cancel races its plan's end: once the worker is the pool's again (another
    plan's, soon), the kill meant for that run must miss it."""
    pool = shared_pool()
    cancels: list[threading.Thread] = []
    release = pool.release

    def release_then_cancel(worker: Worker) -> None:
        release(worker)
        with relay_module._running_lock:
            states = [relay.state for relay in relay_module._running.values()]
        for state in states:  # the run's cancel lands just now, from the caller's thread
            cancels.append(threading.Thread(target=cancel_in_sandbox, args=(state,)))
            cancels[-1].start()

    monkeypatch.setattr(pool, "release", release_then_cancel)
    interpreter = Interpreter({"double": lambda n: 2 * n})
    assert interpreter.run("double(n=2)").value == 4
    monkeypatch.undo()
    assert cancels
    for thread in cancels:
        thread.join(PATIENCE_S)
    for attempt in range(3 * POOL_TARGET):  # whichever idle worker each plan gets
        assert interpreter.run(f"double(n={attempt})").value == 2 * attempt


NON_PLAIN_PLANS = [
    "def f():\n    return 1\necho(x=f)",
    "echo(x=echo)",
    "echo(x=[1] * 200)",
    "deep = []\nfor i in range(100):\n    deep = [deep]\necho(x=deep)",
    "echo(x=1, **{'y': 2})",
    "parallel(echo(x=1), echo(x=echo))",
]


@pytest.mark.parametrize("plan", NON_PLAIN_PLANS)
def test_arguments_are_checked_in_a_worker_as_in_process(plan: str) -> None:
    limits = Limits(max_size=100)
    errors = []
    for isolation in ("process", "inprocess"):
        interpreter = Interpreter({"echo": lambda x: x}, limits=limits,
                                  isolation=isolation)  # type: ignore[arg-type]
        with pytest.raises(TFInterpreterError) as caught:
            interpreter.run(plan)
        error = caught.value
        errors.append((type(error), str(error),
                       [(r.name, r.line, r.col, r.error) for r in error.trace]))
    assert errors[0] == errors[1]


def test_idle_workers_of_other_memory_limits_make_room_for_the_one_in_use() -> None:
    pool = WorkerPool(idle=2)
    try:
        limits = [Limits(max_memory_mb=mb).memory_bytes for mb in (300, 310, 320, 330, 340)]
        for memory in limits:  # one idle worker of each of five limits: the pool is full
            pool.release(pool.acquire(memory))
        in_use = Limits().memory_bytes
        pool.release(pool.acquire(in_use))
        wait_until(lambda: pool.idle_count(in_use) >= pool.idle_target, what="a refill")
        assert pool.stats()["size"] <= POOL_TARGET + 1
    finally:
        pool.close()


def test_sandbox_processes_do_not_load_openssl() -> None:
    # a worker opens no connection and hashes with the standard library's own code
    assert Interpreter().run("hash('abc') == hash('abc')").value is True
    pool = shared_pool()
    for pid in [pool.zygote_pid, *pool.worker_pids()]:
        with open(f"/proc/{pid}/maps") as maps:
            mapped = maps.read()
        assert "libssl" not in mapped and "libcrypto" not in mapped


#: What compiles or checks a plan, and the host's side of the sandbox: a sandbox process
#: runs code its host compiled, so it never needs them (each costs memory in every worker).
COMPILE_TIME_MODULES = {
    "dcbrain.tfplan.checker", "dcbrain.tfplan._argument_types", "dcbrain.tfplan._chain_prompts",
    "dcbrain.tfplan._result_fields", "dcbrain.tfplan.shapes", "dcbrain.tfplan.scopes",
    "dcbrain.tfplan.flow", "dcbrain.tfplan.rewrite",
    "dcbrain.tfplan._operators", "dcbrain.tfplan._displays", "dcbrain.tfplan.labels.rewrite",
    "dcbrain.tfplan.labels.analysis", "dcbrain.tfplan.labels.hoist",
    "dcbrain.tfplan.labels.exprs", "dcbrain.tfplan.sandbox.pool", "dcbrain.tfplan.sandbox.relay",
    "difflib",
}
#: What only the host's async side needs (an event loop, futures, logging): a sandbox
#: process's callables answer at once, and every process of the pool is smaller without.
HOST_ONLY_MODULES = {"asyncio", "concurrent.futures", "logging"}

#: The zygote's own start (``pool._BOOTSTRAP`` up to ``main``), then what a child does: it
#: prepares, and runs the plans read from stdin with the worker's own ``_run``.
_RUN_AS_WORKER = pool_module._BOOTSTRAP.replace("main(int(sys.argv[2]))\n", "") + """\
import json, pickle, socket
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.sandbox import _worker
from dcbrain.tfplan.sandbox._wire import Channel
runs = pickle.loads(sys.stdin.buffer.read())
_worker.prepare()
channel = Channel(socket.socketpair()[0], trusted=True)
answers = [_worker._run(channel, source=source, code=code, limits=Limits(), names=[],
                        construct=False, tracking="strict", sources={}, trusted_fields={},
                        reads={}) for source, code in runs]
print(json.dumps({"answers": answers, "modules": sorted(sys.modules)}))
"""


def test_sandbox_processes_import_no_checker_rewriter_or_event_loop() -> None:
    assert "main(" not in _RUN_AS_WORKER  # the zygote's start is what this runs
    sources = [
        "def add(a, b):\n    return a + b\nsorted([add(1, 2), 1])[0] == 1\n",
        "def one(a):\n    return a\none(1, 2)\n",  # the error path of a label-tracking run
    ]
    runs = [(source, marshal.dumps(compile_source(source, frozenset(), "strict")[1]))
            for source in sources]
    done = subprocess.run(
        [sys.executable, "-S", "-c", _RUN_AS_WORKER, str(pool_module._PACKAGE_DIR)],
        input=pickle.dumps(runs), capture_output=True, env=pool_module._zygote_environment(),
        check=True, timeout=PATIENCE_S * 3,
    )
    report = json.loads(done.stdout)
    ran, failed = report["answers"]
    assert ran["value"] is True
    assert failed["error"]["kind"] == "TypeError"
    with pytest.raises(TFInterpreterError) as in_process:
        Interpreter(isolation="inprocess", tracking="strict").run(sources[1])
    assert failed["error"]["message"] == in_process.value.message
    assert "dcbrain.tfplan.sandbox._zygote" in report["modules"]
    assert COMPILE_TIME_MODULES.isdisjoint(report["modules"])
    assert HOST_ONLY_MODULES.isdisjoint(report["modules"])
