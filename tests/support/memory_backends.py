"""Types for tests that run on every memory backend (tests/memory/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

from dcbrain.memory import Memory

#: ``make_memory(**options)``: a new, empty memory of the backend under test.
MemoryFactory = Callable[..., Memory]
