"""Splitting text into pieces of bounded length.

Documents are cut at the coarsest boundary that fits: paragraphs, then sentences, then
words, then characters. ``fit_prefix`` cuts a single text to a budget with a marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable

LengthFunction = Callable[[str], int]

_SPLITTERS = (
    re.compile(r"(?<=\n)\s*\n"),  # paragraphs: a blank line
    re.compile(r"(?<=[.!?;。！？；])\s*"),  # sentences
    re.compile(r"(?<=\s)(?=\S)"),  # words
)


def split_text(text: str, max_length: int, length: LengthFunction) -> list[str]:
    """Consecutive pieces of ``text``, each stripped and at most ``max_length`` long."""
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    chunks: list[str] = []
    for piece in _pack(_segments(text, max_length, length, 0), max_length, length):
        stripped = piece.strip()
        if stripped:
            chunks.append(stripped)
    return chunks


def _segments(text: str, max_length: int, length: LengthFunction, level: int) -> list[str]:
    """``text`` cut into segments that each fit, finest boundary used only where needed."""
    if length(text) <= max_length:
        return [text]
    if level == len(_SPLITTERS):
        return _split_chars(text, max_length, length)
    parts = [part for part in _split_keeping(text, _SPLITTERS[level]) if part]
    if len(parts) <= 1:
        return _segments(text, max_length, length, level + 1)
    segments: list[str] = []
    for part in parts:
        segments.extend(_segments(part, max_length, length, level + 1))
    return segments


def _split_keeping(text: str, pattern: re.Pattern[str]) -> list[str]:
    """``text`` cut at ``pattern``'s matches; the matched whitespace stays with the left part."""
    parts: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        if match.end() > start and match.end() < len(text):
            parts.append(text[start : match.end()])
            start = match.end()
    parts.append(text[start:])
    return parts


def _split_chars(text: str, max_length: int, length: LengthFunction) -> list[str]:
    pieces: list[str] = []
    start = 0
    while start < len(text):
        rest = text[start:]

        def fits(k: int, rest: str = rest) -> bool:
            return length(rest[:k]) <= max_length

        size = max(longest_fitting_prefix(rest, fits), 1)  # always move the cut forward
        pieces.append(rest[:size])
        start += size
    return pieces


def _pack(segments: list[str], max_length: int, length: LengthFunction) -> list[str]:
    """Adjacent segments joined greedily while the joined text still fits."""
    packed: list[str] = []
    current = ""
    for segment in segments:
        candidate = current + segment
        if current and length(candidate) > max_length:
            packed.append(current)
            current = segment
        else:
            current = candidate
    if current:
        packed.append(current)
    return packed


def longest_fitting_prefix(text: str, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``0..len(text)`` with ``fits(k)``, for ``fits`` monotone in ``k``.

    Probes grow geometrically first so a huge text costs time near the answer, not its size.
    """
    if not fits(0):
        return -1
    low, high = 0, min(64, len(text))
    while high < len(text) and fits(high):
        low, high = high, min(high * 2, len(text))
    if fits(high):
        return high
    while high - low > 1:  # invariant: fits(low) and not fits(high)
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def fit_prefix(
    text: str, budget: int, length: LengthFunction, marker: str, render: Callable[[str], str]
) -> str | None:
    """The longest ``text[:k] + marker`` whose rendering fits ``budget``; ``None`` if none."""

    def fits(k: int) -> bool:
        return length(render(text[:k].rstrip() + marker)) <= budget

    size = longest_fitting_prefix(text, fits)
    if size < 0:
        return None
    return text[:size].rstrip() + marker
