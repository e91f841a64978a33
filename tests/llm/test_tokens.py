"""Token counting: the ``cl100k_base`` counts, and which long texts are kept counted."""

from __future__ import annotations

import pickle
from collections import OrderedDict

import pytest

from dcbrain.llm import tokens
from dcbrain.llm.tokens import cl100k_base, cl100k_base_length


def test_counts_are_the_encodings_for_short_and_long_texts() -> None:
    short = "The answer is four."
    long = "A planning prompt that is long enough to be kept. " * 20
    for text in (short, long, long):
        assert cl100k_base_length(text) == len(cl100k_base().encode(text))
    assert cl100k_base_length("") == 0


def test_a_long_text_is_kept_only_once_it_came_again() -> None:
    once = "The validation prompt of one run, with its own result. " * 10 + "(run 1)"
    twice = "The planning prompt every run sends. " * 10
    cl100k_base_length(once)
    cl100k_base_length(twice)
    assert once not in tokens._counted and twice not in tokens._counted
    assert cl100k_base_length(twice) == len(cl100k_base().encode(twice))
    assert tokens._counted[twice] == len(cl100k_base().encode(twice))
    assert once not in tokens._counted


def test_what_is_kept_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_KEPT", 3)
    monkeypatch.setattr(tokens, "_SEEN", 5)
    monkeypatch.setattr(tokens, "_counted", OrderedDict())
    monkeypatch.setattr(tokens, "_seen", OrderedDict())
    texts = [f"text number {i} " * 30 for i in range(10)]
    for text in texts:
        cl100k_base_length(text)
        cl100k_base_length(text)
    assert len(tokens._counted) <= 3 and len(tokens._seen) <= 5
    assert list(tokens._counted)[-1] == texts[-1]  # the oldest are dropped first


def test_the_encoder_still_encodes_and_decodes_without_its_python_table() -> None:
    encoding = cl100k_base()
    assert "_mergeable_ranks" not in vars(encoding)  # 13 MB the encoder does not read
    tokens_of = encoding.encode("hello world")
    assert encoding.decode(tokens_of) == "hello world"
    assert b"".join(encoding.decode_single_token_bytes(t) for t in tokens_of) == b"hello world"
    # pickled by its registered name, as before
    assert pickle.loads(pickle.dumps(encoding)).encode("hello world") == tokens_of
