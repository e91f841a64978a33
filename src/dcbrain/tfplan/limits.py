"""Sandbox limits of one plan run. Every limit ends the plan with a clear error, never a crash."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

#: Limits whose 0 means a value derived from the others.
_DERIVED = frozenset({"max_memory_mb"})


@dataclass(frozen=True)
class Limits:
    """Limits of a plan run; the names are shared with ``dcbrain plan run --limit NAME=VALUE``.

    ``max_operations`` counts loop iterations and work proportional to the size of every
    string or collection the plan builds (one operation per 4 elements), so it bounds both
    time and memory of pure computation; plan function calls are counted against the same
    number separately. ``max_size`` bounds the length of every str and collection,
    ``max_bits`` the size of every int. ``max_memory_mb`` is the address space of the sandbox
    process running the plan (``0``: 512 MiB plus 1 KiB per unit of ``max_size``); it has
    no effect on in-process runs. ``max_host_mb`` bounds what the host keeps for one run,
    over all its calls: arguments and results in the trace and the trace entries, the
    plan's value, the branch scopes of ``parallel``, the intermediate results its chains
    add (all the runs of a process share one more budget besides:
    :func:`~dcbrain.tfplan.host_budget.set_process_host_mb`). ``max_branches`` bounds the
    branches of one ``parallel(...)``, refused before any branch is built.
    """

    max_operations: int = 10_000_000
    max_call_depth: int = 200
    timeout_s: float = 300.0
    max_size: int = 1_000_000
    max_bits: int = 1_000_000
    max_output_chars: int = 100_000
    max_calls: int = 200
    max_parallel: int = 8
    max_branches: int = 1000
    max_memory_mb: int = 0
    max_host_mb: int = 32

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            zero_ok = spec.name in _DERIVED  # 0 means: derived from the other limits
            if (not isinstance(value, int | float) or isinstance(value, bool) or value < 0
                    or (value == 0 and not zero_ok)):
                raise ValueError(f"limit {spec.name} must be a positive number, got {value!r}")

    @property
    def memory_bytes(self) -> int:
        """Address space of a sandbox process running a plan under these limits."""
        if self.max_memory_mb:
            return int(self.max_memory_mb) * 2**20
        return 512 * 2**20 + int(self.max_size) * 1024

    @property
    def host_bytes(self) -> int:
        """Bytes the host may keep for one plan run under these limits."""
        return int(self.max_host_mb) * 2**20

    @classmethod
    def names(cls) -> list[str]:
        return [spec.name for spec in fields(cls)]

    def with_overrides(self, overrides: dict[str, Any]) -> Limits:
        """A copy with ``overrides`` applied; strings are converted to the limit's type."""
        converted: dict[str, Any] = {}
        known = {spec.name: spec for spec in fields(self)}
        for name, raw in overrides.items():
            if name not in known:
                raise ValueError(f"unknown limit {name!r}; known limits: {', '.join(known)}")
            kind = float if name == "timeout_s" else int
            try:
                converted[name] = kind(raw)
            except (TypeError, ValueError):
                raise ValueError(f"limit {name} expects a number, got {raw!r}") from None
        return replace(self, **converted)
