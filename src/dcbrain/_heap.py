"""Giving the heap's freed memory back to the system."""

from __future__ import annotations

import contextlib
import ctypes


def trim_heap() -> None:
    """Return the heap's free pages to the system (glibc's ``malloc_trim``; a no-op
    elsewhere): after a one-time load whose scratch memory was freed, which glibc would
    otherwise keep."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)
