"""What every store shares: ``close()`` and use as a (sync) context manager."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Self


class ClosableStore:
    """A store that may hold resources; ``with store:`` closes it at the end."""

    def close(self) -> None:
        """Release the store's resources (nothing by default)."""

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
