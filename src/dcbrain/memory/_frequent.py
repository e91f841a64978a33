"""Leaving very frequent words out of keyword search.

bm25 scores every item that matches any query word, so one word found in most items
makes a search cost as much as the whole index. Such a word hardly changes the ranking
(its inverse document frequency is near zero), so searches leave it out — unless every
word of the query is that frequent, when nothing better is left to rank by.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

#: The number of items in the index (an upper bound will do).
IndexSize = Callable[[], int]
#: ``count(term, limit)``: items matching ``term``, counting no further than ``limit``.
TermCount = Callable[[str, int], int]

#: A word is very frequent in more than this share of all items ...
DEFAULT_FREQUENT_TERM_SHARE: Final = 0.01
#: ... and in more than this many items: small stores are searched with every word.
FREQUENT_TERM_MIN_ITEMS: Final = 200
# Counts are reused until the index has grown by this share.
_RECOUNT_GROWTH: Final = 0.1
_MAX_CACHED_TERMS: Final = 10_000


class FrequentTerms:
    """Counts of the items each term matches, capped where they stop mattering.

    The index is the caller's (SQLite's FTS5, PostgreSQL's full-text search): it is
    asked through ``size`` and ``count``.
    """

    def __init__(self, share: float | None = DEFAULT_FREQUENT_TERM_SHARE) -> None:
        if share is not None and not 0 < share <= 1:
            raise ValueError(f"frequent_term_share must be in (0, 1] or None, got {share!r}")
        self.share = share
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int]] = {}  # term -> (count, the cap it had)
        self._counted_at = 0  # the index size the cached counts belong to

    def informative(self, terms: list[str], size: IndexSize, count: TermCount) -> list[str]:
        """``terms`` without the very frequent ones; all of them when every one is."""
        if self.share is None or len(terms) < 2:
            return terms
        items = size()
        cap = max(FREQUENT_TERM_MIN_ITEMS, int(items * self.share))
        if items <= cap:
            return terms
        self._forget_if_grown(items)
        kept = [term for term in terms if self._count(count, term, cap) <= cap]
        return kept or terms

    def forget(self) -> None:
        """Drop every cached count (after a deletion)."""
        with self._lock:
            self._counts.clear()

    def _forget_if_grown(self, size: int) -> None:
        with self._lock:
            grown = size > self._counted_at * (1 + _RECOUNT_GROWTH) or size < self._counted_at
            if grown or len(self._counts) > _MAX_CACHED_TERMS:
                self._counts.clear()
                self._counted_at = size

    def _count(self, count_term: TermCount, term: str, cap: int) -> int:
        """Items matching ``term``, or ``cap + 1`` when there are more than ``cap``."""
        cached = self._counts.get(term)
        if cached is not None:
            count, cached_cap = cached
            if count <= cached_cap or cap <= cached_cap:  # exact, or over any smaller cap
                return min(count, cap + 1)
        count = count_term(term, cap + 1)
        with self._lock:
            self._counts[term] = (count, cap)
        return int(count)
