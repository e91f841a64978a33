"""Run a coroutine to completion from synchronous code."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(make_coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``make_coroutine()`` and return its result, blocking the calling thread.

    Without a running event loop in this thread the coroutine runs on a fresh loop.
    Inside a running loop (a notebook, a sync callback in async code) it runs on a
    fresh loop in a worker thread, with the caller's context variables, so the sync
    API works everywhere; it blocks the calling loop while it waits, as sync code does.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dcbrain-sync") as pool:
        return pool.submit(context.run, lambda: asyncio.run(make_coroutine())).result()
