"""What the host keeps for all the runs of a process is bounded too (``process_host_mb``).

Each run pays for what the host keeps for it twice: from its own budget and from the
process's, shared by every run at once. A run past the process's budget fails with a
clear limit error, the others go on; what a run held is given back when it ends. The
boundary copies stop at the budget instead of copying everything first, ``parallel`` is
refused past ``max_branches`` before a branch is built, and a sandbox message larger than
the run may keep is refused from its header.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from dcbrain.tfplan import BranchLimitExceeded, Interpreter, Limits, SizeLimitExceeded
from dcbrain.tfplan.host_budget import (
    DEFAULT_PROCESS_HOST_MB,
    HostBudget,
    process_budget,
    set_process_host_mb,
)
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tfplan.values import sized_plan_value

ISOLATIONS = [pytest.param("inprocess", id="inprocess"), pytest.param("process", id="sandbox")]
MIB_TEXT = "x" * 1_000_000  # about 1 MiB (ASCII: no UTF-8 copy once it is pickled)


@pytest.fixture
def process_mb() -> Iterator[Any]:
    """Sets the process budget for one test; the default again afterwards."""
    yield set_process_host_mb
    set_process_host_mb(DEFAULT_PROCESS_HOST_MB)


def big(n: int) -> str:
    return MIB_TEXT


def take(items: Any) -> int:
    return len(items)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_run_past_the_process_budget_fails_and_the_other_run_goes_on(
    isolation: Isolation, process_mb: Any,
) -> None:
    process_mb(16)
    held = threading.Event()
    other_done = threading.Event()

    def hold() -> str:
        held.set()
        assert other_done.wait(60), "the second run never ended"
        return "held"

    keeper = Interpreter({"big": big, "hold": hold}, isolation=isolation)
    outcome: list[Any] = []
    plan = "for i in range(10):\n    big(n=i)\nhold()"  # keeps 9 MiB, then waits
    first = threading.Thread(target=lambda: outcome.append(keeper.run(plan)))
    first.start()
    try:
        assert held.wait(60)
        greedy = Interpreter({"big": big}, isolation=isolation)
        with pytest.raises(SizeLimitExceeded) as caught:
            greedy.run("for i in range(10):\n    big(n=i)\n")
    finally:
        other_done.set()
        first.join(60)
    error = caught.value
    assert error.limit == "process_host_mb"
    assert "all the plan runs of this process (process_host_mb)" in error.message
    assert error.line == 2
    # its own budget (32 MiB) holds 10 results; the process's, with the other run's 9 MiB, not
    assert len(error.trace) < 10 and error.trace[-1].result is None
    assert [record.result for record in outcome[0].trace][-1] == "held"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_what_a_run_held_is_given_back_when_it_ends(isolation: Isolation) -> None:
    before = process_budget().used
    interpreter = Interpreter({"big": big}, isolation=isolation)
    result = interpreter.run("[len(big(n=i)) for i in range(5)]")
    assert result.value == [len(MIB_TEXT)] * 5
    assert process_budget().used == before
    with pytest.raises(SizeLimitExceeded):  # a failed run gives back what it held too
        Interpreter({"big": big}, isolation=isolation,
                    limits=Limits(max_host_mb=3)).run("[big(n=i) for i in range(5)]")
    assert process_budget().used == before


def test_the_process_budget_takes_only_a_positive_number_of_mib() -> None:
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="process_host_mb"):
            set_process_host_mb(bad)  # type: ignore[arg-type]


def test_a_closed_budget_gives_back_its_share_once() -> None:
    before = process_budget().used
    budget = HostBudget(8 * 2**20)
    budget.charge(2**20, "x")
    assert process_budget().used == before + 2**20
    budget.close()
    budget.close()
    assert process_budget().used == before
    budget.charge(2**20, "a late result")  # an abandoned call ending late: own limit only
    assert process_budget().used == before


def test_the_boundary_copy_stops_at_the_budget_before_copying_everything() -> None:
    empty: list[Any] = []
    shared = [empty] * 999_000  # a million references, one list
    budget = HostBudget(2**20, shared=None)
    tracemalloc.start()
    try:
        with pytest.raises(SizeLimitExceeded) as caught:
            sized_plan_value(shared, max_items=1_000_000, where="take() arguments",
                             budget=budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.limit == "max_host_mb"
    assert "take() arguments" in caught.value.message
    assert peak < 4 * 2**20, f"the copy built {peak} bytes before it stopped"
    assert budget.used == 0, "nothing is charged for a refused copy"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_shared_references_passed_to_a_tool_are_refused_at_the_first_call(
    isolation: Isolation,
) -> None:
    plan = ("empty = []\nrefs = [empty for i in range(999990)]\n"
            "for i in range(9):\n    take(items=refs)\n")
    with pytest.raises(SizeLimitExceeded) as caught:
        Interpreter({"take": take}, isolation=isolation).run(plan)
    assert caught.value.limit == "max_host_mb"
    assert (caught.value.line, len(caught.value.trace)) == (4, 0)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_parallel_past_max_branches_is_refused_before_any_branch(isolation: Isolation) -> None:
    calls: list[int] = []

    def step(n: int) -> int:
        calls.append(n)
        return n

    interpreter = Interpreter({"step": step}, isolation=isolation,
                              limits=Limits(max_branches=5))
    for plan in ("parallel(*[step(n=i) for i in range(6)])",
                 "parallel(*[step(n=i) for i in range(3) for j in range(2)])",
                 "parallel(" + ", ".join(f"step(n={i})" for i in range(6)) + ")",
                 "xs = list(range(6))\nparallel(step(n=0), *xs)"):
        with pytest.raises(BranchLimitExceeded) as caught:
            interpreter.run(plan)
        assert caught.value.limit == "max_branches"
        assert "max_branches" in caught.value.message and caught.value.line >= 1
    assert calls == [], "no branch ran"
    assert interpreter.run("parallel(*[step(n=i) for i in range(5)])").value == [0, 1, 2, 3, 4]


def test_parallel_of_a_million_branches_by_default_is_refused() -> None:
    with pytest.raises(BranchLimitExceeded, match="1000 branches"):
        Interpreter({"take": take}, isolation="inprocess").run(
            "parallel(*[0 for i in range(999000)])")


def test_a_sandbox_message_larger_than_the_run_may_keep_is_refused() -> None:
    # the plan's output is only bounded by max_output_chars: a message of 4 MB, where
    # the run may keep 1 MiB, is refused from its header
    limits = Limits(max_host_mb=1, max_size=10_000_000, max_output_chars=10_000_000)
    interpreter = Interpreter(isolation="process", limits=limits)
    with pytest.raises(SizeLimitExceeded) as caught:
        interpreter.run("print('x' * 4_000_000)")
    assert caught.value.limit == "max_host_mb"
    message = caught.value.message
    assert "a message of" in message and "from the plan process" in message
    assert interpreter.run("'x' * 10").value == "x" * 10, "the next run gets a sound worker"
