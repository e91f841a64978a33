"""Tools that record their calls, for plan-execute agent tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CallLog:
    """Tools ``work``, ``awork`` (async) and ``flaky`` that record every call.

    ``fail`` maps a tool name to the message of the ``RuntimeError`` it raises.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, str] = {}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def tools(self) -> dict[str, Callable[..., Any]]:
        def work(n: int) -> str:
            """Do a unit of work."""
            self._enter("work", n=n)
            return f"work {n}"

        async def awork(n: int) -> str:
            """Do a unit of work, asynchronously."""
            self._enter("awork", n=n)
            return f"awork {n}"

        def flaky(n: int = 0) -> str:
            """Fail whenever ``fail`` names it."""
            self._enter("flaky", n=n)
            return f"flaky {n}"

        return {"work": work, "awork": awork, "flaky": flaky}

    def _enter(self, name: str, **args: Any) -> None:
        self.calls.append((name, args))
        if name in self.fail:
            raise RuntimeError(self.fail[name])
