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


@pytest.mark.parametrize(("case", "isolation", "refused_by"), [
    ("shared_references", "inprocess", "(max_host_mb)"),
    ("shared_references", "process", "(max_host_mb)"),
    ("many_branches", "inprocess", "(max_branches)"),
    ("many_branches", "process", "(max_branches)"),
    # in process the sets are the plan's own values, bounded by its operation budget
    # alone (about 390 MiB); a sandbox worker builds them in its own memory
    ("set_displays", "process", "OperationLimitExceeded"),
])
def test_a_hostile_plan_keeps_the_host_under_its_peak(case: str, isolation: str,
                                                      refused_by: str) -> None:
    report = measure(case, isolation)
    assert report["status"] == "failed"
    assert refused_by in report["error"], report["error"]
    peak_mib = report["peak_kib"] / 1024
    assert peak_mib < PEAK_MIB, f"{case} ({isolation}): host peaked at {peak_mib:.0f} MiB"
