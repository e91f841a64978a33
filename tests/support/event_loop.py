"""How freely the event loop serves other tasks while something is awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def ticks_while(work: Awaitable[Any]) -> tuple[int, BaseException | None]:
    """How often another task of this loop ran while ``work`` was awaited, and what
    ``work`` raised (``None``: nothing). Work that blocks the loop until it ends gives 0."""
    task = asyncio.ensure_future(work)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)

    ticker = asyncio.ensure_future(tick())
    try:
        await task
    except Exception as exc:
        return ticks, exc
    finally:
        await ticker
    return ticks, None


#: A plan that takes a while to compile and that only Python's compiler refuses, at its end.
SLOW_TO_COMPILE = "\n".join(f"x{i} = a[i] * 3 + f'{{b}}'" for i in range(500)) + "\nbreak"
