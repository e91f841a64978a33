"""Waiting for a condition, not for time: poll it until it holds or a deadline passes."""

from __future__ import annotations

import time
from collections.abc import Callable

#: How long a condition may take before the test fails (generous: the machine is shared).
PATIENCE_S = 60.0


def wait_until(predicate: Callable[[], object], timeout_s: float = PATIENCE_S,
               what: str = "condition", *, interval_s: float = 0.02) -> None:
    """Return once ``predicate()`` is true; fail the test naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout_s} s"
        time.sleep(interval_s)
