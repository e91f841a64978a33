"""Text that can always be stored and sent: lone surrogates replaced.

A plan may build any string, ``chr(0xD800)`` included; such a lone surrogate cannot be
encoded as UTF-8, so SQLite, JSON over HTTP and a terminal would all refuse it. At
those boundaries every surrogate code point becomes U+FFFD (the replacement character).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

_SURROGATE = re.compile("[\ud800-\udfff]")
T = TypeVar("T")


def encodable(value: T) -> T:
    """``value`` with every string in it (dict keys too) encodable as UTF-8."""
    return _clean(value)  # type: ignore[no-any-return]


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() or not _SURROGATE.search(value) else \
            _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_clean(item) for item in value)
    return value
