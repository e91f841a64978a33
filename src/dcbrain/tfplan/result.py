"""What a plan run returns: the value, the captured output, the call trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dcbrain.usage import Usage


@dataclass
class CallRecord:
    """One chain/tool call made by a plan (the plan's call trace)."""

    name: str
    args: list[Any]
    kwargs: dict[str, Any]
    line: int = 0
    col: int = 0
    result: Any = None
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    branch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "args": self.args,
            "kwargs": self.kwargs,
            "line": self.line,
            "col": self.col,
            "result": self.result,
            "error": self.error,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "branch": self.branch,
        }


@dataclass
class ConsoleResult:
    """The result of running a plan.

    ``value`` is the value of a top-level ``return``, else of the last top-level
    expression statement (``None`` if there is none). ``usage`` is filled by the layer
    whose callables spend tokens (the chain layer's result adds what its chains did).
    ``abandoned_calls`` counts the sync calls the run stopped waiting for at its time
    limit (or cancellation): they may still be running, and their returns are ignored.
    """

    value: Any = None
    stdout: str = ""
    trace: list[CallRecord] = field(default_factory=list)
    operations: int = 0
    duration_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    returned: bool = False
    abandoned_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "stdout": self.stdout,
            "trace": [record.to_dict() for record in self.trace],
            "operations": self.operations,
            "duration_s": self.duration_s,
            "usage": self.usage.to_dict(),
            "abandoned_calls": self.abandoned_calls,
        }
