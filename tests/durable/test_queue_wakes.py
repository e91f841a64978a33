"""Waking DBOS's queue thread: a wake is never lost, and a run's end is followed by looks
at the queue once DBOS has recorded it (durable/_dbos.py)."""

from __future__ import annotations

import threading
import time

from dcbrain.durable._dbos import FollowUps, WakeableEvent
from support.waiting import wait_until


def test_a_wake_while_nobody_waits_ends_the_next_wait_at_once() -> None:
    event = WakeableEvent()
    event.wake()  # the queue thread was busy dequeuing
    started = time.monotonic()
    assert event.wait(timeout=30.0) is False
    assert time.monotonic() - started < 10.0
    assert not event.is_set()


def test_a_wake_counts_once() -> None:
    event = WakeableEvent()
    event.wake()
    event.wake()
    assert event.wait(timeout=30.0) is False
    assert event._woken is False  # no second early end kept for the next wait


def test_a_wake_during_a_wait_ends_it_and_a_set_event_stays_a_stop() -> None:
    event = WakeableEvent()
    ended = threading.Event()
    results: list[bool] = []

    def wait() -> None:
        results.append(event.wait(timeout=30.0))
        ended.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_until(lambda: bool(event._cond._waiters), what="the waiter to wait")  # type: ignore[attr-defined]
    event.wake()
    assert ended.wait(10.0)
    event.set()
    assert event.wait(timeout=30.0) is True
    waiter.join()
    assert results == [False]


def test_follow_ups_call_after_each_end_coalesced() -> None:
    calls: list[float] = []
    follow_ups = FollowUps(lambda: calls.append(time.monotonic()), (0.05, 0.2))
    try:
        ended = time.monotonic()
        for _ in range(20):  # twenty runs ending at once
            follow_ups.after_end()
        wait_until(lambda: len(calls) >= 2, what="two follow-up calls")
    finally:
        follow_ups.close()
    assert len(calls) == 2  # one per delay, however many runs ended
    assert calls[0] >= ended + 0.05 and calls[1] >= ended + 0.2


def test_closed_follow_ups_call_nothing() -> None:
    calls: list[int] = []
    follow_ups = FollowUps(lambda: calls.append(1), (0.01,))
    follow_ups.close()
    follow_ups.after_end()
    assert follow_ups._thread is None and calls == []
