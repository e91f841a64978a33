"""Plans that would take their host down end with a clean, positioned error instead.

The table is ``hostile_cases.HOSTILE_CASES`` (kept as data so the same cases can run
through sandbox worker processes too); each case must end quickly, in the expected limit
or error, with a message of bounded size, without touching the host. The tests after the
table check what an error alone cannot show: threads of ``parallel``, the checker's speed.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hostile_cases import HOSTILE_CASES, LIMITS, MAX_WALL_S, HostileCase

from dcbrain.tfplan import Interpreter, Limits, TFInterpreterError, check
from dcbrain.tfplan.errors import TimeLimitExceeded
from dcbrain.tfplan.values import MAX_MESSAGE_CHARS
from support.waiting import wait_until


def interpreter(host: Any, callables: dict[str, Any] | None = None,
                **overrides: Any) -> Interpreter:
    return Interpreter(callables={**host.callables, **(callables or {})}, tools=host.tools,
                       limits=Limits(**{**LIMITS, **overrides}))


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in HOSTILE_CASES])
def test_hostile_plan_ends_in_a_clean_error(host_guard: Any, case: HostileCase) -> None:
    started = time.monotonic()
    try:
        result = interpreter(host_guard, **case.limits).run(case.plan)
    except BaseException as exc:  # SystemExit or KeyboardInterrupt must not slip past
        outcome: BaseException = exc
    else:
        pytest.fail(f"plan completed: value={result.value!r:.200}")
    elapsed = time.monotonic() - started

    host_guard.assert_host_untouched()
    assert isinstance(outcome, TFInterpreterError), f"plain {outcome!r} escaped"
    assert isinstance(outcome, case.expected), f"{type(outcome).__name__}: {outcome}"
    assert elapsed < MAX_WALL_S, f"took {elapsed:.1f}s"
    assert outcome.line > 0, f"no position: {outcome}"
    assert len(outcome.message) <= MAX_MESSAGE_CHARS + 100


def live_branch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate()
            if thread.name.startswith("tf_plan-branch") and thread.is_alive()]


def test_queued_parallel_branches_never_start_after_the_run_ended(host_guard: Any) -> None:
    started: list[int] = []

    def mark(i: int) -> int:
        started.append(i)
        return i

    plan = ("def spin(i):\n    mark(i=i)\n    while True:\n        pass\n"
            "parallel(*[spin(i) for i in range(20)])")
    with pytest.raises(TimeLimitExceeded):
        interpreter(host_guard, {"mark": mark}, max_parallel=2, timeout_s=0.5,
                    max_operations=10**12).run(plan)
    at_end = len(started)
    wait_until(lambda: live_branch_threads() == [], what="the branch threads ending")
    assert len(started) == at_end == 2  # the two running branches; none of the 18 queued
    assert live_branch_threads() == []
    host_guard.assert_host_untouched()


def test_max_parallel_counts_branches_over_every_nesting_level(host_guard: Any) -> None:
    lock = threading.Lock()
    in_flight = peak = 0

    def probe(i: int) -> int:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.02)
        with lock:
            in_flight -= 1
        return i

    plan = ("def group(g):\n    return parallel(*[probe(i=g * 10 + j) for j in range(4)])\n"
            "parallel(*[group(g) for g in range(4)])")
    result = interpreter(host_guard, {"probe": probe}, max_parallel=3).run(plan)
    assert result.value == [[g * 10 + j for j in range(4)] for g in range(4)]
    assert 2 <= peak <= 3
    host_guard.assert_host_untouched()


def test_recursion_over_parallel_runs_in_a_bounded_number_of_threads(host_guard: Any) -> None:
    before = threading.active_count()
    peak = before
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, threading.active_count())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with pytest.raises(TFInterpreterError):
            interpreter(host_guard, max_parallel=4, timeout_s=1.0).run(
                "f = lambda n: parallel(f(n + 1), f(n + 1))\nf(0)")
    finally:
        done.set()
        sampler.join()
    assert peak - before <= 1 + 3  # the sampler and max_parallel - 1 helpers
    host_guard.assert_host_untouched()


def test_check_stays_linear_in_unknown_names() -> None:
    plan = "".join(f"value_{i} = unknown_{i} + other_{i}\n" for i in range(800))
    assert len(plan) > 26_000
    started = time.monotonic()
    problems = check(plan)
    assert time.monotonic() - started < MAX_WALL_S
    assert len(problems) == 21
    assert problems[-1].message == "... and 1580 more problems"
