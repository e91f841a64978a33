"""Text preparation for the FTS5 keyword index.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, so a Chinese or Japanese
sentence would be one token. Indexed text therefore gets a space around every CJK
character, and queries search CJK text as two-character phrases. User text never reaches
FTS5 as query syntax: every term is a quoted string made only of word characters.
"""

from __future__ import annotations

import re
from typing import Final

MAX_QUERY_TERMS: Final = 64

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"([{_CJK}])")
_TERM = re.compile(f"([{_CJK}]+)|((?:(?![{_CJK}])[^\\W_])+)")


def index_text(text: str) -> str:
    """``text`` as it is fed to the index: CJK characters stand alone as tokens."""
    return _CJK_CHAR.sub(r" \1 ", text)


def query_terms(text: str) -> list[str]:
    """The distinct FTS5 terms of ``text`` (quoted words and CJK pairs), in order."""
    terms: list[str] = []
    seen: set[str] = set()
    for match in _TERM.finditer(text):
        cjk, word = match.group(1), match.group(2)
        if cjk:
            pieces = [cjk] if len(cjk) == 1 else [cjk[i : i + 2] for i in range(len(cjk) - 1)]
            candidates = ['"' + " ".join(piece) + '"' for piece in pieces]
        else:
            candidates = ['"' + word.lower() + '"']
        for term in candidates:
            if term not in seen:
                seen.add(term)
                terms.append(term)
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return terms[:MAX_QUERY_TERMS]


def index_words(text: str) -> list[str]:
    """The words of ``text`` as a search index without its own tokenizer stores them:
    lowercase words, and every CJK character on its own (matching :func:`query_terms`)."""
    words: list[str] = []
    for match in _TERM.finditer(text):
        cjk, word = match.group(1), match.group(2)
        if cjk:
            words.extend(cjk)
        else:
            words.append(word.lower())
    return words
