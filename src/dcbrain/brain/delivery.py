"""Delivering a run's events to its subscribers, off the threads that record them.

A run records an event under its lock (its ``seq`` is its place) and hands it to a
:class:`Fanout`: one lane per subscriber, a queue that one worker at a time drains in
``seq`` order, on a thread of a shared pool. The thread that records an event never waits
for a subscriber, and a slow subscriber delays only its own lane: the plan, the brain's
event loop and the other subscribers go on.

A subscriber may be a coroutine function (or return an awaitable): it is awaited on the
event loop the fanout was made on (the run's), its lane waiting for it, so its events
stay in order without the loop waiting for anything.

A subscriber that raises is skipped for that event only; ``on_failure`` hears of it.

Memory is bounded: a lane that falls :data:`MAX_PENDING` events behind (a subscriber that
never returns, or cannot keep up) is cut off — its queued events are dropped, it gets no
more of the run's events, and ``on_failure`` hears of it. :meth:`Fanout.delivered` waits
until every lane not cut off has delivered what it was given; the end of a run waits for
it, so whoever gets a run's result has seen all its events, ``final`` the last. A
subscriber that never returns and is not cut off therefore holds its run's end (as it held
the whole run when subscribers were called on the run's own thread); the lanes of other
runs, on other workers, go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import queue
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future
from typing import Any, Final, Generic, TypeVar

logger = logging.getLogger("dcbrain.events")

#: Events a subscriber may be behind before it is cut off from its run.
MAX_PENDING: Final = 10_000

#: Threads delivering events, at most (shared by every run of the process).
MAX_WORKERS: Final = 64

E = TypeVar("E")

#: A subscriber: called with each event; may return an awaitable (awaited on the run's loop).
Subscriber = Callable[[E], "Awaitable[None] | None"]

#: ``on_failure(subscriber, event, failure, error)``: what went wrong, and its exception.
FailureReport = Callable[[Callable[..., Any], E, str, BaseException | None], None]


class _Workers:
    """Daemon threads that run submitted functions, started as needed up to ``limit``.

    Daemon threads: a subscriber that never returns cannot hold the process's exit.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._count = 0

    def submit(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)
        if self._idle.acquire(blocking=False):
            return  # an idle worker takes it
        with self._lock:
            if self._count >= self.limit:
                return  # it waits for a worker to finish its task
            self._count += 1
            number = self._count
        threading.Thread(target=self._work, name=f"dcbrain-events-{number}",
                         daemon=True).start()

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            try:
                task()
            except BaseException:  # a lane reports its subscribers' errors itself
                logger.exception("event delivery failed")
            self._idle.release()


_workers = _Workers(MAX_WORKERS)


class _Lane(Generic[E]):
    """One subscriber's events not delivered yet, and whether a worker delivers them."""

    __slots__ = ("busy", "cut_off", "events", "subscriber")

    def __init__(self, subscriber: Subscriber[E]) -> None:
        self.subscriber = subscriber
        self.events: deque[E] = deque()
        self.busy = False
        self.cut_off = False

    @property
    def name(self) -> str:
        subscriber = self.subscriber
        return getattr(subscriber, "__qualname__", type(subscriber).__name__)


class Fanout(Generic[E]):
    """Delivers events to ``subscribers``, each in the order :meth:`push` got them.

    :meth:`push` is called in the events' order (under the recorder's lock) and returns at
    once. ``loop``: where awaitables returned by subscribers are awaited (default: the
    running loop, if any, when the fanout is made; else each runs in its own loop).
    """

    def __init__(self, subscribers: Iterable[Subscriber[E]], *,
                 on_failure: FailureReport[E],
                 max_pending: int = MAX_PENDING,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._lanes: list[_Lane[E]] = [_Lane(subscriber) for subscriber in subscribers]
        self._on_failure = on_failure
        self.max_pending = max_pending
        self._lock = threading.Lock()
        self._waiters: list[Future[None]] = []
        if loop is None:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        self._loop = loop

    def push(self, event: E) -> None:
        """Queue ``event`` for every subscriber (a lane that is idle gets a worker)."""
        start: list[_Lane[E]] = []
        cut: list[_Lane[E]] = []
        with self._lock:
            for lane in self._lanes:
                if lane.cut_off:
                    continue
                if len(lane.events) >= self.max_pending:
                    lane.cut_off = True
                    lane.events.clear()
                    cut.append(lane)
                    continue
                lane.events.append(event)
                if not lane.busy:
                    lane.busy = True
                    start.append(lane)
            settled = self._settled() if cut else []
        for lane in start:
            _workers.submit(functools.partial(self._drain, lane))
        for lane in cut:
            self._on_failure(lane.subscriber, event,
                             f"event subscriber {lane.name} fell {self.max_pending} events "
                             f"behind; it gets no more events of this run", None)
        _resolve(settled)

    def settled(self) -> Future[None] | None:
        """A future done once every lane not cut off has delivered what it has (``None``:
        that is so now)."""
        with self._lock:
            if not self._busy():
                return None
            waiter: Future[None] = Future()
            self._waiters.append(waiter)
            return waiter

    async def delivered(self) -> None:
        """Wait, without holding the loop, until :meth:`settled`."""
        waiter = self.settled()
        if waiter is not None:
            await asyncio.wrap_future(waiter)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until :meth:`settled` (a thread's :meth:`delivered`); whether it is."""
        waiter = self.settled()
        if waiter is None:
            return True
        try:
            waiter.result(timeout_s)
        except TimeoutError:
            return False
        return True

    def _busy(self) -> bool:
        return any(lane.busy and not lane.cut_off for lane in self._lanes)

    def _settled(self) -> list[Future[None]]:
        """The waiters to tell, once nothing is busy (under the lock)."""
        if self._busy():
            return []
        waiters, self._waiters = self._waiters, []
        return waiters

    def _drain(self, lane: _Lane[E]) -> None:
        while True:
            with self._lock:
                if lane.cut_off or not lane.events:
                    lane.busy = False
                    lane.events.clear()
                    settled = self._settled()
                    break
                batch = list(lane.events)
                lane.events.clear()
            for event in batch:
                if lane.cut_off:
                    break
                self._deliver(lane, event)
        _resolve(settled)

    def _deliver(self, lane: _Lane[E], event: E) -> None:
        try:
            result = lane.subscriber(event)
            if inspect.isawaitable(result):
                self._await(result)
        except Exception as exc:
            self._on_failure(lane.subscriber, event,
                             f"event subscriber {lane.name} failed on "
                             f"{_describe(event)}: {type(exc).__name__}: {exc}", exc)

    def _await(self, awaitable: Awaitable[Any]) -> None:
        async def wait() -> None:
            await awaitable

        loop = self._loop
        if loop is None or loop.is_closed():
            asyncio.run(wait())
            return
        asyncio.run_coroutine_threadsafe(wait(), loop).result()


def _describe(event: object) -> str:
    kind, seq = getattr(event, "type", None), getattr(event, "seq", None)
    return f"{kind} event {seq}" if kind is not None else repr(event)


def _resolve(waiters: list[Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
