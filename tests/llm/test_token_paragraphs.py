"""A long text's tokens are counted paragraph by paragraph: the same count as the whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dcbrain.brain.templates import DEFAULT_PLANNING_TEMPLATE, DEFAULT_VALIDATE_TEMPLATE
from dcbrain.llm.tokens import cl100k_base, cl100k_base_length, paragraphs

# what moves cl100k_base's pieces: line breaks, blank lines, spaces around them,
# contractions, digits, punctuation, other scripts, Unicode whitespace, special tokens
PIECES = ["a", "Zé", "'s", "'ll", " ", "  ", "\t", "\n", "\n\n", "\r\n", " \n\n", "\n\n ",
          ".", ";", "(", "}", "-", "0", "123", "\u00a0", "\u3000", "\u2028", "\x0b", "\x85",
          "漢字", "😀", "<|endoftext|>", "#", "~", "!"]


def whole(text: str) -> int:
    return len(cl100k_base().encode(text, disallowed_special=()))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=200))
def test_the_paragraphs_tokens_add_up_to_the_texts(parts: list[str]) -> None:
    text = "".join(parts)
    cut = paragraphs(text)
    assert "".join(cut) == text
    assert sum(whole(part) for part in cut) == whole(text)
    assert cl100k_base_length(text) == whole(text)


def test_a_prompt_is_cut_at_its_blank_lines_and_counted_as_a_whole() -> None:
    for template in (DEFAULT_PLANNING_TEMPLATE, DEFAULT_VALIDATE_TEMPLATE):
        cut = paragraphs(template)
        assert len(cut) > 3 and all(part.endswith("\n\n") for part in cut[:-1])
        assert cl100k_base_length(template) == whole(template)
    # no cut where a line break or a space follows the blank line
    assert paragraphs("a\n\n\nb\n\n c\n\nd") == ["a\n\n\nb\n\n c\n\n", "d"]
