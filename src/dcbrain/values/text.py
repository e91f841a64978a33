r"""Text that can always be stored, sent and shown.

A plan may build any string, ``chr(0xD800)`` included; such a lone surrogate cannot be
encoded as UTF-8, so SQLite, JSON over HTTP and a terminal would all refuse it. At
those boundaries every surrogate code point becomes U+FFFD (the replacement character).

A string may also hold terminal control sequences (``"\x1b]52;c;…\x07"`` writes the
clipboard, ``"\x1b[2J"`` clears the screen): :func:`terminal_text` is what the CLI
shows of text it did not write itself.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

_SURROGATE = re.compile("[\ud800-\udfff]")
#: C0 controls but tab and newline, DEL, C1 controls (``\x9b`` is a CSI on its own) and
#: the bidirectional overrides and isolates, which reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
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


def terminal_text(text: str) -> str:
    """``text`` safe to write to a terminal: control characters other than newline and tab
    shown as escapes (``\\x1b``, ``\\u202e``), lone surrogates as U+FFFD."""
    return _CONTROL.sub(_escape, encodable(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
