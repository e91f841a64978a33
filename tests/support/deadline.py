"""Bounded waits for "does not hang" checks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def outcome_within(seconds: float, work: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """What ``work()`` returned or raised, run in a thread of its own; fails the test if it
    is still running after ``seconds``."""
    outcome: list[tuple[Any, BaseException | None]] = []

    def target() -> None:
        try:
            outcome.append((work(), None))
        except BaseException as exc:
            outcome.append((None, exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome[0]
