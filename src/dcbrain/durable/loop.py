"""The event loop every run of a worker process executes on.

One loop in one thread for all runs: hundreds of runs in flight are hundreds of tasks, not
hundreds of threads each with a loop (which cost a thread, a selector and a self-pipe per
run, and left the store writer and DBOS competing with all of them for the GIL).

A ``SystemExit`` or ``KeyboardInterrupt`` raised in a task (a tool may raise one) leaves
the task done with that exception, then stops the loop that ran it. Here the loop is
started again at once: the exception still reaches whoever awaits the task, as any other
error would (the run that raised it fails), and every other run goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

logger = logging.getLogger("dcbrain.durable")

T = TypeVar("T")


class RunLoop:
    """An event loop in a daemon thread, with a thread pool sized for ``max_threads``."""

    def __init__(self, *, max_threads: int = 32, name: str = "dcbrain-runs") -> None:
        self.loop = asyncio.new_event_loop()
        # asyncio.to_thread in runs (memory, stores, blocking helpers): one pool for all of
        # them, as large as the runs need; threads are made only when all are busy.
        self.loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(
            max_threads, thread_name_prefix=f"{name}-io"))
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` as a task of this loop (from any thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Callable[..., object], *args: Any) -> None:
        """Call ``callback(*args)`` on the loop's thread (from any thread)."""
        self.loop.call_soon_threadsafe(callback, *args)

    def in_flight(self, timeout_s: float = 5.0) -> int:
        """How many tasks (runs, and what they started) are not done yet (from any thread)."""
        return self.submit(_tasks_in_flight()).result(timeout_s)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the loop and its thread, unless runs are in flight on it.

        Runs in flight are left as they are, on the loop's daemon thread, until the
        process exits: a worker that stops leaves its runs to be resumed (by itself when
        it starts again, or by a live peer), never ended by a cancellation.
        """
        if self._closing or self.loop.is_closed():
            return
        try:
            busy = self.in_flight(timeout_s)
        except Exception:  # a loop that cannot answer is left running, as a busy one
            logger.warning("the run loop did not say whether runs are in flight; it stays",
                           exc_info=True)
            return
        if busy:
            logger.debug("%d run task(s) in flight: the run loop stays", busy)
            return
        self._closing = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout_s)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            try:
                self.loop.run_forever()
            except (SystemExit, KeyboardInterrupt) as exc:  # a run's task raised it
                logger.warning("a run raised %s: that run fails, the others go on",
                               type(exc).__name__)
                continue
            if self._closing:
                break
        self.loop.close()  # shuts the thread pool down too


async def _tasks_in_flight() -> int:
    current = asyncio.current_task()
    return sum(task is not current and not task.done() for task in asyncio.all_tasks())
