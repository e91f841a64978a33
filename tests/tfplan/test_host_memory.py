"""The host's peak memory stays bounded when a brain runs hostile plans with default limits.

Each case runs in a child process of its own (``support/host_memory.py``), which reports
its peak resident set as the kernel counted it (``VmHWM``): no timing is involved. Before
the host budgets these plans took the host to 0.8-1.4 GiB.
"""

from __future__ import annotations

import pytest

from support.host_memory import measure

#: What the host may reach for any of the cases (a bare brain process is about 50 MiB).
PEAK_MIB = 200


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
@pytest.mark.parametrize(("case", "refused_by"), [
    ("shared_references", "max_host_mb"),
    ("many_branches", "max_branches"),
])
def test_a_hostile_plan_keeps_the_host_under_its_peak(case: str, refused_by: str,
                                                      isolation: str) -> None:
    report = measure(case, isolation)
    assert report["status"] == "failed"
    assert f"({refused_by})" in report["error"], report["error"]
    peak_mib = report["peak_kib"] / 1024
    assert peak_mib < PEAK_MIB, f"{case} ({isolation}): host peaked at {peak_mib:.0f} MiB"
