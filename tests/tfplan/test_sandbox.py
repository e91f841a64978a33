"""Plans in sandbox processes: crashes, freezes and memory blow-ups stay in the worker.

Real worker processes throughout: the shared pool of this test process runs every plan
of ``Interpreter(isolation="process")`` (the default).
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from hostile_cases import DISPLAY_CASES, LIMITS, HostileCase

from dcbrain.tfplan import (
    CallRecord,
    Interpreter,
    Limits,
    PlanProcessCrashed,
    SizeLimitExceeded,
    TFCallError,
    TFInterpreterError,
    TimeLimitExceeded,
)
from dcbrain.tfplan.host import Dispatcher
from dcbrain.tfplan.sandbox import shared_pool
from dcbrain.tfplan.sandbox._wire import Channel, plain_loads
from dcbrain.tfplan.sandbox.relay import GRACE_S, REPORT_WAIT_S
from dcbrain.tfplan.state import Cancelled, Expired, RunState
from support.sandbox import busy_worker, running_worker, wait_gone
from support.waiting import wait_until

PATIENCE_S = 20.0

# One C call that holds the interpreter lock for hours: modular pow on 660,000-bit ints.
# Operations are unlimited here so that only the time limit can end it.
FROZEN_PLAN = "print('start')\nbase = 3\nx = pow(base, 10**200000, 10**200000 + 7)\nprint(x)"
FROZEN_LIMITS = Limits(timeout_s=1.0, max_operations=10**18)


def test_tools_run_on_the_host_and_the_plan_in_a_worker() -> None:
    pids: list[int] = []

    def where() -> int:
        pids.append(os.getpid())
        return os.getpid()

    result = Interpreter({"where": where}).run("host = where()\nhost")
    assert pids == [os.getpid()] and result.value == os.getpid()
    assert result.trace[0].name == "where" and (result.trace[0].line, result.trace[0].col) == (1, 8)


def test_a_segfaulting_worker_is_a_clean_error_and_is_replaced() -> None:
    entered = threading.Event()

    def ready() -> str:
        entered.set()
        return "go"

    outcome: list[BaseException] = []

    def run() -> None:
        try:
            Interpreter({"ready": ready}).run("ready()\nx = 0\nwhile True:\n    x += 1")
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert entered.wait(PATIENCE_S)
    os.kill(running_worker(), signal.SIGSEGV)  # in its loop, past the call
    thread.join(PATIENCE_S)
    error = outcome[0]
    assert isinstance(error, PlanProcessCrashed)
    assert error.message == "plan process crashed: signal 11"
    assert error.line in (3, 4) and error.source_line is not None
    assert [record.name for record in error.trace] == ["ready"]
    assert Interpreter().run("1 + 1").value == 2  # the next plan gets a fresh worker


def test_a_plan_that_segfaults_its_worker_ends_with_a_crash_or_a_clean_error() -> None:
    # Hashing a value nested 300,000 deep recurses in C past the worker's stack.
    plan = ("deep = 0\nfor i in range(300000):\n    deep = (deep,)\n"
            "x = set({0: deep}.values())\nx")
    with pytest.raises(TFInterpreterError) as caught:
        Interpreter().run(plan)
    if isinstance(caught.value, PlanProcessCrashed):
        assert caught.value.message == "plan process crashed: signal 11"
        assert caught.value.line == 4
    assert Interpreter().run("'still here'").value == "still here"


def test_a_frozen_c_call_is_killed_at_the_time_limit_at_its_line() -> None:
    started = time.monotonic()
    with pytest.raises(TimeLimitExceeded) as caught:
        Interpreter(limits=FROZEN_LIMITS).run(FROZEN_PLAN)
    elapsed = time.monotonic() - started
    assert (caught.value.line, caught.value.col) == (3, 1)
    assert "x = pow(" in str(caught.value)
    # killed, not run to its end (hours): the limit plus the grace and the report wait
    assert elapsed < FROZEN_LIMITS.timeout_s + GRACE_S + REPORT_WAIT_S + 10


def test_other_plans_run_while_one_worker_is_frozen() -> None:
    failures: list[BaseException] = []

    def frozen() -> None:
        try:
            Interpreter(limits=FROZEN_LIMITS).run(FROZEN_PLAN)
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=frozen)
    thread.start()
    busy_worker()
    values = [Interpreter({"double": lambda n: 2 * n}).run(f"double(n={i})").value
              for i in range(20)]
    thread.join(PATIENCE_S)
    assert values == [2 * i for i in range(20)]
    assert [type(error) for error in failures] == [TimeLimitExceeded]


def test_running_out_of_address_space_is_a_clean_error() -> None:
    # 100 lists of 7.2 MB each: within every language limit, past 300 MB of address space
    plan = "rows = []\nfor i in range(100):\n    rows.append([i] * 900000)\nlen(rows)"
    limits = Limits(max_memory_mb=300, max_operations=10**18)
    with pytest.raises(SizeLimitExceeded) as caught:
        Interpreter(limits=limits).run(plan)
    assert caught.value.message == "plan ran out of memory"
    assert caught.value.line == 3
    assert Interpreter(limits=limits).run("sum(range(10))").value == 45


def test_killed_workers_are_replaced_in_the_pool() -> None:
    memory = Limits().memory_bytes
    Interpreter().run("1")  # the pool is up
    for _ in range(2):
        with pytest.raises(TimeLimitExceeded):
            Interpreter(limits=Limits(timeout_s=0.3, max_operations=10**18)).run(
                "x = pow(3, 10**200000, 10**200000 + 7)")
    deadline = time.monotonic() + PATIENCE_S
    while shared_pool().idle_count(memory) < shared_pool().idle_target:
        assert time.monotonic() < deadline, "the pool did not refill"
        time.sleep(0.02)
    assert Interpreter().run("'fresh'").value == "fresh"


def test_sync_and_async_tools_run_concurrently_on_the_host_in_parallel() -> None:
    barrier = threading.Barrier(3, timeout=PATIENCE_S)

    def meet(x: int) -> int:
        barrier.wait()  # only returns once all three branches are in their call
        return x

    arrived: list[int] = []

    async def gather(x: int) -> int:
        arrived.append(x)
        while len(arrived) < 3:
            await asyncio.sleep(0.005)
        return x * 10

    interpreter = Interpreter({"meet": meet, "gather": gather})
    assert interpreter.run("parallel(meet(x=1), meet(x=2), meet(x=3))").value == [1, 2, 3]
    result = interpreter.run("parallel(meet(x=1), meet(x=2), meet(x=3))\n"
                             "parallel(gather(x=1), gather(x=2), gather(x=3))")
    assert result.value == [10, 20, 30]
    assert sorted(record.branch for record in result.trace[3:]) == [0, 1, 2]


async def test_arun_awaits_async_tools_on_the_callers_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def fetch(url: str) -> str:
        loops.append(asyncio.get_running_loop())
        return url.upper()

    result = await Interpreter({"fetch": fetch}).arun("a, b = parallel(fetch(url='x'), "
                                                      "fetch(url='y'))\na + b")
    assert result.value == "XY" and loops == [asyncio.get_running_loop()] * 2


async def test_cancelling_arun_kills_the_worker_promptly() -> None:
    task = asyncio.create_task(Interpreter().arun("x = 0\nwhile True:\n    x += 1"))
    pid = await asyncio.to_thread(busy_worker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(wait_gone, pid)


class _Hooks:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any, int]] = []

    def fork(self, count: int) -> list[Any]:
        self.events.append(("fork", count, os.getpid()))
        return [f"t{i}" for i in range(count)]

    def enter(self, token: Any) -> None:
        self.events.append(("enter", token, os.getpid()))

    def join(self, tokens: list[Any]) -> None:
        self.events.append(("join", tokens, os.getpid()))


class _Observer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []
        self.records: list[CallRecord] = []

    def on_call_start(self, record: CallRecord) -> None:
        self.records.append(record)
        self.seen.append(("start", record.name, os.getpid()))

    def on_call_end(self, record: CallRecord) -> None:
        self.seen.append(("end", record.name, os.getpid()))


def test_hooks_and_observer_run_on_the_host_in_argument_order() -> None:
    hooks, observer = _Hooks(), _Observer()
    interpreter = Interpreter({"echo": lambda x: x}, parallel_hooks=hooks, observer=observer)
    result = interpreter.run("parallel(echo(x=1), echo(x=2))")
    host = os.getpid()
    assert hooks.events == [("fork", 2, host), ("enter", "t0", host), ("enter", "t1", host),
                            ("join", ["t0", "t1"], host)]
    assert sorted(observer.seen) == [("end", "echo", host)] * 2 + [("start", "echo", host)] * 2
    # the observer saw the records of the trace themselves, not copies from the sandbox
    assert sorted(map(id, observer.records)) == sorted(map(id, result.trace))


ERROR_PLANS = [
    "d = {}\nd['k']",
    "def f(n):\n    return 1 // n\nf(0)",
    "fail(msg='boom')",
    "x = 1\nparallel(echo(x=1), fail(msg='second'))",
    "assert 1 > 2, 'no'",
    "while True:\n    pass",
    "for i in range(5):\n    echo(x=i)",
    "print('partial')\nraise ValueError('stop')",
]


@pytest.mark.parametrize("plan", ERROR_PLANS)
def test_errors_are_the_same_in_a_worker_and_in_process(plan: str) -> None:
    def fail(msg: str) -> None:
        raise RuntimeError(msg)

    limits = Limits(max_operations=10_000, max_calls=3)
    errors = []
    for isolation in ("process", "inprocess"):
        interpreter = Interpreter({"echo": lambda x: x, "fail": fail}, limits=limits,
                                  isolation=isolation)  # type: ignore[arg-type]
        with pytest.raises(TFInterpreterError) as caught:
            interpreter.run(plan)
        error = caught.value
        errors.append((type(error), str(error), error.stdout,
                       [(r.name, r.line, r.col, r.error) for r in error.trace]))
    assert errors[0] == errors[1]


def test_results_are_the_same_in_a_worker_and_in_process() -> None:
    plan = "xs = [echo(x=i) for i in range(3)]\nprint(xs)\nreturn {'n': len(xs), 's': {1, 2}}"
    results = [Interpreter({"echo": lambda x: x}, isolation=isolation).run(plan)  # type: ignore[arg-type]
               for isolation in ("process", "inprocess")]
    process, inprocess = results
    assert (process.value, process.stdout, process.operations, process.returned) == \
        (inprocess.value, inprocess.stdout, inprocess.operations, inprocess.returned)
    assert [r.to_dict() | {"started_at": 0, "duration_s": 0} for r in process.trace] == \
        [r.to_dict() | {"started_at": 0, "duration_s": 0} for r in inprocess.trace]


def test_a_failing_call_is_reported_with_the_callees_error() -> None:
    def lookup(key: str) -> str:
        raise KeyError(key)

    with pytest.raises(TFCallError) as caught:
        Interpreter({"lookup": lookup}).run("a = 1\nb = lookup(key='k')")
    assert caught.value.kind == "KeyError" and caught.value.location == "2:5"


def test_isolation_must_be_known() -> None:
    with pytest.raises(ValueError, match="isolation"):
        Interpreter(isolation="thread")  # type: ignore[arg-type]


def test_messages_from_a_worker_cannot_name_a_class_or_function() -> None:
    plain = {"value": [1, 2.5, "s", (None, True)], "set": {1}, "frozen": frozenset({2})}
    assert plain_loads(pickle.dumps(plain, protocol=5)) == plain
    for hostile in (os.system, CallRecord("x", [], {}), Limits()):
        with pytest.raises(pickle.UnpicklingError, match="not allowed"):
            plain_loads(pickle.dumps(hostile, protocol=5))


def test_the_pool_stops_with_its_process() -> None:
    script = (
        "from dcbrain.tfplan import Interpreter\n"
        "from dcbrain.tfplan.sandbox import shared_pool\n"
        "assert Interpreter().run('6 * 7').value == 42\n"
        "pool = shared_pool()\n"
        "print(pool.zygote_pid, *pool.worker_pids())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=PATIENCE_S * 3, check=True)
    pids = [int(word) for word in done.stdout.split()]
    assert len(pids) >= 2  # the zygote and at least one worker
    for pid in pids:
        wait_gone(pid)


@pytest.mark.parametrize("stopped", ["expired", "cancelled"])
def test_a_call_refused_because_the_plan_stopped_still_ends_for_observers(stopped: str) -> None:
    observer = _Observer()
    state = RunState(limits=Limits(), observer=observer)
    setattr(state, stopped, True)
    ran: list[int] = []
    with pytest.raises(Expired if stopped == "expired" else Cancelled):
        Dispatcher(state, [""], None).call("echo", lambda x: ran.append(x), [], {"x": 1})
    assert ran == []  # never run ...
    assert [kind for kind, _, _ in observer.seen] == ["start", "end"]  # ... yet closed
    assert state.trace[0].error == "stopped"


def test_a_deadline_with_branch_calls_still_running_is_always_a_time_limit() -> None:
    # The plan's own thread takes the last branch (a started helper takes the first):
    # it loops on quick calls and meets the deadline while the helper's branch is still
    # in a slow call on the host, so the plan ends with that call unanswered.
    def tool(x: int) -> int:
        time.sleep(0.01 if x == 1 else 0.4)
        return x

    plan = ("def work(i):\n    while True:\n        tool(i)\n"
            "parallel(work(2), work(1))")
    interpreter = Interpreter({"tool": tool}, limits=Limits(timeout_s=0.2))
    outcomes = []
    for _ in range(8):
        with pytest.raises(TFInterpreterError) as caught:
            interpreter.run(plan)
        outcomes.append((type(caught.value).__name__, caught.value.line))
    assert outcomes == [("TimeLimitExceeded", 3)] * 8
    assert interpreter.run("tool(1)").value == 1  # a clean worker runs the next plan


class _SlowForkHooks(_Hooks):
    """A fork hook that returns only once the plan's deadline is well behind it: the
    deadline was set before the hook was entered, so ``timeout_s`` from entry is past it,
    and the margin lets the run's watchdog (which looks every 20 ms) and its waiting
    caller see it even on a loaded machine."""

    MARGIN_S = 0.3

    def __init__(self, timeout_s: float) -> None:
        super().__init__()
        self.timeout_s = timeout_s

    def fork(self, count: int) -> list[Any]:
        past_the_deadline = time.monotonic() + self.timeout_s + self.MARGIN_S
        while time.monotonic() <= past_the_deadline:
            threading.Event().wait(past_the_deadline - time.monotonic())
        return super().fork(count)


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_deadline_never_interrupts_a_parallel_hook(isolation: str) -> None:
    hooks = _SlowForkHooks(timeout_s=0.1)
    interpreter = Interpreter({"echo": lambda x: x}, parallel_hooks=hooks,
                              limits=Limits(timeout_s=hooks.timeout_s),
                              isolation=isolation)  # type: ignore[arg-type]
    with pytest.raises(TimeLimitExceeded):
        interpreter.run("x = 1\nparallel(echo(x=1), echo(x=2))")
    assert hooks.events[0][:2] == ("fork", 2)  # the hook ran to its end


HASH_PLAN = "[hash('tf_plan'), hash((1, 'x', None, float('nan'))), hash(frozenset({'a', 'b'}))]"
SET_ORDER_PLAN = "list({'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'})"


def test_hash_and_set_order_are_the_same_in_every_process() -> None:
    # another host process (its own hash seed) with its own pool of sandbox processes
    script = (
        "import json\nfrom dcbrain.tfplan import Interpreter\n"
        f"plans = {[HASH_PLAN, SET_ORDER_PLAN]!r}\n"
        "print(json.dumps([Interpreter(isolation=isolation).run(plan).value\n"
        "                  for isolation in ('process', 'inprocess') for plan in plans]))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="4242")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=PATIENCE_S * 3, check=True)
    elsewhere = json.loads(done.stdout)
    here = Interpreter().run(HASH_PLAN).value
    assert here == Interpreter(isolation="inprocess").run(HASH_PLAN).value
    assert here == elsewhere[0] == elsewhere[2]
    assert Interpreter().run(SET_ORDER_PLAN).value == elsewhere[1]
    assert Interpreter().run("hash(1) == hash(1.0) == hash(True) == 1").value is True


def test_a_big_answer_waits_for_a_busy_worker_while_the_relay_polls() -> None:
    # The relay polls its channel with short timeouts while branch threads answer the
    # worker on the same socket; an answer of megabytes to a worker that reads it only
    # later must arrive whole, not be cut off at the poll's timeout.
    host_end, worker_end = socket.socketpair()
    host, worker = Channel(host_end, trusted=False), Channel(worker_end, trusted=True)
    with pytest.raises(TimeoutError):
        host.recv(0.05)
    answer = ("reply", 1, "ok", "é" * 2_000_000)
    failures: list[BaseException] = []

    def send() -> None:
        try:
            host.send(answer)
        except BaseException as exc:  # reported below
            failures.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    # the worker is busy: the answer fills the socket's buffers meanwhile
    wait_until(lambda: not select.select([], [host_end], [], 0)[1], what="full buffers")
    try:
        assert worker.recv(PATIENCE_S) == answer
    finally:
        sender.join(PATIENCE_S)
        host.close()
        worker.close()
    assert failures == []


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in DISPLAY_CASES])
def test_displays_of_constants_are_charged_in_the_sandbox(host_guard: Any,
                                                          case: HostileCase) -> None:
    interpreter = Interpreter(limits=Limits(**{**LIMITS, **case.limits}))
    with pytest.raises(case.expected) as caught:
        interpreter.run(case.plan)
    host_guard.assert_host_untouched()
    assert caught.value.line > 0, f"no position: {caught.value}"
