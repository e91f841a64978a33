"""What the host keeps for a plan run is paid for from one budget per run (``max_host_mb``).

Each call's arguments and result stay in the run's trace on the host, however the plan
itself drops them; so does the plan's value. Their sum, not each value alone, is bounded:
past it the plan ends with ``SizeLimitExceeded`` naming the budget, and the host goes on.
"""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.tfplan import Interpreter, Limits, SizeLimitExceeded
from dcbrain.tfplan.interpreter import Isolation

ISOLATIONS = [pytest.param("inprocess", id="inprocess"), pytest.param("process", id="sandbox")]
#: About 1 MiB of text (900,000 characters of one byte each).
MIB_TEXT = "é" * 900_000


def big(n: int) -> str:
    """A result of about 1 MiB."""
    return MIB_TEXT


def take(text: str) -> int:
    """A tool that keeps nothing itself."""
    return len(text)


def fan_out(count: int) -> str:
    calls = ", ".join(f"big(n={i})" for i in range(count))
    return f"total = 0\nfor part in parallel({calls}):\n    total += len(part)\ntotal"


def run(plan: str, isolation: Isolation, **limits: Any) -> Any:
    interpreter = Interpreter({"big": big, "take": take}, limits=Limits(**limits),
                              isolation=isolation)
    return interpreter.run(plan)


def test_parallel_results_kept_on_the_host_are_bounded_by_their_sum() -> None:
    # 48 results of 1 MiB each are fine one by one; the host keeping all of them is not
    # (the default budget is 32 MiB).
    with pytest.raises(SizeLimitExceeded) as caught:
        run(fan_out(48), "inprocess")
    error = caught.value
    assert error.limit == "max_host_mb"
    assert "big() result" in error.message and "max_host_mb" in error.message
    assert error.line > 0


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_results_past_the_host_budget_end_the_plan_at_the_call(isolation: Isolation) -> None:
    plan = "total = 0\nfor i in range(40):\n    total += len(big(n=i))\ntotal"
    with pytest.raises(SizeLimitExceeded) as caught:
        run(plan, isolation, max_host_mb=8)
    error = caught.value
    assert (error.limit, error.kind, error.line) == ("max_host_mb", "SizeLimitExceeded", 3)
    kept = [record for record in error.trace if record.result is not None]
    assert 0 < len(kept) <= 9, "the results kept fit in 8 MiB"
    assert error.trace[len(kept)].error.startswith("SizeLimitExceeded")
    assert error.trace[len(kept)].result is None, "a refused result is not kept"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_parallel_fan_out_through_the_host_is_bounded(isolation: Isolation) -> None:
    with pytest.raises(SizeLimitExceeded) as caught:
        run(fan_out(24), isolation, max_host_mb=8)
    assert caught.value.limit == "max_host_mb"


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_arguments_kept_in_the_trace_are_paid_for(isolation: Isolation) -> None:
    plan = "text = 'é' * 900000\nfor i in range(40):\n    take(text=text)\n"
    with pytest.raises(SizeLimitExceeded) as caught:
        run(plan, isolation, max_host_mb=8)
    assert caught.value.limit == "max_host_mb"
    assert "take() arguments" in caught.value.message


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_plan_value_is_paid_for_too(isolation: Isolation) -> None:
    plan = "[i * 0.5 for i in range(500000)]"  # about 16 MiB as Python objects
    with pytest.raises(SizeLimitExceeded, match="plan result"):
        run(plan, isolation, max_host_mb=8)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_run_within_its_budget_is_unchanged_and_each_run_has_its_own(
    isolation: Isolation,
) -> None:
    interpreter = Interpreter({"big": big}, limits=Limits(max_host_mb=8), isolation=isolation)
    plan = "total = 0\nfor i in range(3):\n    total += len(big(n=i))\ntotal"
    for _ in range(4):  # 4 runs keep 12 MiB in all, each 3 MiB
        result = interpreter.run(plan)
        assert result.value == 3 * len(MIB_TEXT)
        assert [record.result for record in result.trace] == [MIB_TEXT] * 3


def test_the_host_budget_defaults_to_32_mib_per_run() -> None:
    assert Limits().host_bytes == 32 * 2**20
    assert Limits(max_memory_mb=600).host_bytes == 32 * 2**20, "no longer derived"
    assert Limits(max_host_mb=50).host_bytes == 50 * 2**20
    assert Limits().with_overrides({"max_host_mb": "20"}).host_bytes == 20 * 2**20
    for bad in (-1, 0):
        with pytest.raises(ValueError, match="max_host_mb"):
            Limits(max_host_mb=bad)
