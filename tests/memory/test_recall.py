"""Recall returns the newest turns and the most relevant items that fit each budget exactly."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory import TRUNCATION_MARKER, Memory, MemoryItem, RecallBudget, SQLiteMemory
from dcbrain.memory.recall import (
    render_entry,
    render_keyword_hit,
    render_knowledge,
    render_message,
)
from dcbrain.messages import TextMessage
from support.memory_backends import MemoryFactory

LengthFunction = Callable[[str], int]


def words(text: str) -> int:
    return len(text.split())


LENGTHS: dict[str, LengthFunction] = {"chars": len, "words": words, "cl100k": cl100k_base_length}
NO_TERMS = "?!"  # a current input without words: relevance falls back to recency


@pytest.fixture(scope="module")
def shared_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteMemory]:
    store = SQLiteMemory(tmp_path_factory.mktemp("recall") / "recall.db")
    yield store
    store.close()



@pytest.fixture
def memory(make_memory: MemoryFactory) -> Memory:
    """Every test here that takes ``memory`` runs on SQLite and on PostgreSQL."""
    return make_memory()

# -- budgets ---------------------------------------------------------------------------


def test_default_budget_is_16384_cl100k_tokens_per_section() -> None:
    budget = RecallBudget.parse((16384, cl100k_base_length))
    assert (budget.conversation, budget.documents, budget.knowledge, budget.keywords) == (
        16384,
        16384,
        16384,
        16384,
    )
    assert budget.length is cl100k_base_length


@pytest.mark.parametrize(
    ("size", "expected", "length"),
    [
        (100, (100, 100, 100, 100), cl100k_base_length),
        ([1, 2, 3, 4], (1, 2, 3, 4), cl100k_base_length),
        ((1, 2, 3, 4), (1, 2, 3, 4), cl100k_base_length),
        ((50, len), (50, 50, 50, 50), len),
        (([1, 2, 3, 4], len), (1, 2, 3, 4), len),
        ((1, 2, 3, 4, len), (1, 2, 3, 4), len),
    ],
)
def test_memory_chunk_size_forms(
    size: object, expected: tuple[int, ...], length: LengthFunction
) -> None:
    budget = RecallBudget.parse(size)  # type: ignore[arg-type]
    assert (budget.conversation, budget.documents, budget.knowledge, budget.keywords) == expected
    assert budget.length is length


@pytest.mark.parametrize("size", [[1, 2, 3], "100", 1.5, True, [1, 2, 3, -4], (len,), None])
def test_wrong_memory_chunk_size_is_a_clear_error(size: object) -> None:
    with pytest.raises(TypeError, match="memory_chunk_size"):
        RecallBudget.parse(size)  # type: ignore[arg-type]


# -- conversation ----------------------------------------------------------------------


def test_newest_turns_win_and_come_back_in_chronological_order(memory: Memory) -> None:
    turns = [("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four")]
    for role, text in turns:
        memory.commit_message("c1", text, role=role)
    newest_three = sum(len(render_message(TextMessage(t, r))) for r, t in turns[1:])

    exact = memory.recall("c1", NO_TERMS, (newest_three, len))
    one_short = memory.recall("c1", NO_TERMS, (newest_three - 1, len))

    assert [m.content for m in exact.conversation] == ["two", "three", "four"]
    assert len(exact.conversation_text()) == newest_three
    assert [m.content for m in one_short.conversation] == ["three", "four"]


def test_the_committed_current_input_is_not_repeated(memory: Memory) -> None:
    memory.commit_message("c1", "earlier question")
    memory.commit_message("c1", "earlier answer", role="assistant")
    memory.commit_message("c1", "current question")

    recalled = memory.recall("c1", "current question")

    assert [m.content for m in recalled.conversation] == ["earlier question", "earlier answer"]
    assert all(hit.text != "current question" for hit in recalled.keyword_hits)


def test_an_oversized_newest_turn_is_truncated_with_a_marker(memory: Memory) -> None:
    memory.commit_message("c1", "short old turn")
    memory.commit_message("c1", "word " * 5000, role="assistant")

    recalled = memory.recall("c1", NO_TERMS, 200)

    assert len(recalled.conversation) == 1
    message = recalled.conversation[0]
    assert message.role == "assistant"
    assert message.content.endswith(TRUNCATION_MARKER)
    assert cl100k_base_length(recalled.conversation_text()) <= 200
    assert cl100k_base_length(recalled.conversation_text()) >= 190  # the budget is used


def test_a_budget_too_small_for_anything_returns_nothing(memory: Memory) -> None:
    memory.commit_message("c1", "hello there")
    recalled = memory.recall("c1", NO_TERMS, (3, len))
    assert recalled.conversation == []


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.text(min_size=0, max_size=80)),
        max_size=25,
    ),
    budget=st.integers(min_value=0, max_value=600),
    length_name=st.sampled_from(sorted(LENGTHS)),
)
def test_conversation_section_fills_its_budget_exactly(
    shared_memory: Memory,
    turns: list[tuple[str, str]],
    budget: int,
    length_name: str,
) -> None:
    length = LENGTHS[length_name]
    conversation_id = uuid.uuid4().hex
    for role, text in turns:
        shared_memory.commit_message(conversation_id, text, role=role)
    stored = [TextMessage(text, role) for role, text in turns]

    recalled = shared_memory.recall(conversation_id, NO_TERMS, (budget, length)).conversation

    def cost(messages: list[TextMessage]) -> int:
        return sum(length(render_message(m)) for m in messages)

    assert cost(recalled) <= budget
    assert length("".join(render_message(m) for m in recalled)) <= budget
    truncated = (
        len(recalled) == 1
        and recalled[0].content.endswith(TRUNCATION_MARKER)
        and recalled[0].content != stored[-1].content
    )
    if truncated:
        assert recalled[0].role == stored[-1].role
        kept = recalled[0].content.removesuffix(TRUNCATION_MARKER)
        assert stored[-1].content.startswith(kept)
        return
    # The newest turns, in chronological order ...
    tail = stored[len(stored) - len(recalled) :]
    assert [(m.role, m.content) for m in recalled] == [(m.role, m.content) for m in tail]
    # ... and not one turn fewer than fits.
    if len(recalled) < len(stored):
        next_older = stored[len(stored) - len(recalled) - 1]
        if recalled:
            assert cost([*recalled, next_older]) > budget
        else:  # nothing fitted, not even the newest turn cut down to the marker
            marker_only = TextMessage(TRUNCATION_MARKER, stored[-1].role)
            assert length(render_message(marker_only)) > budget


@settings(max_examples=60, deadline=None)
@given(
    facts=st.lists(st.text(min_size=1, max_size=60).map(str.strip).filter(bool), max_size=20),
    budgets=st.lists(st.integers(min_value=0, max_value=300), min_size=4, max_size=4),
    length_name=st.sampled_from(sorted(LENGTHS)),
    query=st.text(max_size=30),
)
def test_every_section_stays_within_its_own_budget(
    shared_memory: Memory,
    facts: list[str],
    budgets: list[int],
    length_name: str,
    query: str,
) -> None:
    length = LENGTHS[length_name]
    conversation_id = uuid.uuid4().hex
    for i, fact in enumerate(facts):
        shared_memory.add_knowledge(conversation_id, fact)
        shared_memory.add_document(conversation_id, fact, source=f"doc{i}")
        shared_memory.commit_message(conversation_id, fact)

    recalled = shared_memory.recall(conversation_id, query, (budgets, length))

    sections = [
        recalled.conversation_text(),
        recalled.documents_text(),
        recalled.knowledge_text(),
        recalled.keyword_text(),
    ]
    for text, budget in zip(sections, budgets, strict=True):
        assert length(text) <= budget
    shown = [i.id for i in (*recalled.documents, *recalled.knowledge, *recalled.keyword_hits)]
    assert len(shown) == len(set(shown))


@settings(max_examples=60, deadline=None)
@given(
    facts=st.lists(st.text(min_size=1, max_size=60).map(str.strip).filter(bool), max_size=20),
    budget=st.integers(min_value=0, max_value=400),
    length_name=st.sampled_from(sorted(LENGTHS)),
)
def test_without_query_terms_knowledge_is_the_newest_that_fits(
    shared_memory: Memory, facts: list[str], budget: int, length_name: str
) -> None:
    length = LENGTHS[length_name]
    conversation_id = uuid.uuid4().hex
    for fact in facts:
        shared_memory.add_knowledge(conversation_id, fact)
    newest_first = list(reversed(facts))

    recalled = shared_memory.recall(conversation_id, NO_TERMS, (budget, length)).knowledge

    def cost(items: list[str]) -> int:
        return sum(length(render_knowledge(_fact(text))) for text in items)

    texts = [item.text for item in recalled]
    assert cost(texts) <= budget
    if len(texts) == 1 and texts[0] != newest_first[0]:
        assert texts[0].endswith(TRUNCATION_MARKER)
        return
    assert texts == newest_first[: len(texts)]
    if texts and len(texts) < len(facts):
        assert cost([*texts, newest_first[len(texts)]]) > budget


def _fact(text: str) -> MemoryItem:
    return MemoryItem(kind="knowledge", id=0, conversation_id="", text=text, created_at=0.0)


# -- documents, knowledge, keyword index -------------------------------------------------


def test_relevant_documents_first_then_the_newest(memory: Memory) -> None:
    memory.add_document("c1", "The warranty covers two years of repairs.", source="warranty")
    memory.add_document("c1", "Returns are accepted within 30 days.", source="returns")
    memory.add_document("c1", "Our stores open at nine.", source="stores")

    recalled = memory.recall("c1", "How long does the warranty last?")

    assert [d.source for d in recalled.documents] == ["warranty", "stores", "returns"]
    assert recalled.documents_text().startswith("[warranty] The warranty covers")


def test_knowledge_is_recalled_even_without_shared_words(memory: Memory) -> None:
    memory.add_knowledge("c1", "The user prefers metric units.")
    recalled = memory.recall("c1", "How far is Paris from Rome?")
    assert recalled.knowledge_text() == "- The user prefers metric units.\n"


def test_keyword_hits_bring_back_old_matching_turns(memory: Memory) -> None:
    memory.commit_message("c1", "My flight number is LH454.")
    for i in range(50):
        memory.commit_message("c1", f"filler turn {i}")

    recalled = memory.recall("c1", "what was my flight number?", [60, 100, 100, 100])

    assert all("LH454" not in m.content for m in recalled.conversation)
    assert recalled.keyword_hits[0].text == "My flight number is LH454."
    assert recalled.keyword_text().startswith("(message, user) My flight number is LH454.")


def test_recall_from_a_reopened_file(db_path: Path) -> None:
    with SQLiteMemory(db_path) as first:
        first.commit_message("c1", "remember the blue door")
    with SQLiteMemory(db_path) as second:
        recalled = second.recall("c1", "which door?")
    assert [m.content for m in recalled.conversation] == ["remember the blue door"]


# -- what the store does ahead of recall -------------------------------------------------


ROLES = st.sampled_from(["user", "assistant", "tool", "", "a role"])


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.tuples(ROLES, st.text(max_size=120)), min_size=1, max_size=6),
    notes=st.lists(st.text(max_size=120), max_size=4),
    source=st.none() | st.text(max_size=20),
)
def test_stored_token_counts_are_exact(
    shared_memory: Memory, turns: list[tuple[str, str]], notes: list[str],
    source: str | None,
) -> None:
    conversation_id = uuid.uuid4().hex
    for role, text in turns:
        shared_memory.commit_message(conversation_id, text, role=role)
    for note in notes:
        shared_memory.add_knowledge(conversation_id, note)
        shared_memory.add_document(conversation_id, note, source=source, chunk_tokens=16)

    items = [item for kind in ("message", "document", "knowledge")
             for item in shared_memory.recent(conversation_id, kind)]  # type: ignore[arg-type]

    assert len(items) >= len(turns)
    for item in items:
        assert item.entry_tokens == cl100k_base_length(render_entry(item))
        assert item.hit_tokens == cl100k_base_length(render_keyword_hit(item))


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.tuples(ROLES, st.text(max_size=80)), min_size=1, max_size=12),
    query=st.text(max_size=30),
)
def test_stored_counts_add_up_to_the_count_of_each_section(
    shared_memory: Memory, turns: list[tuple[str, str]], query: str
) -> None:
    conversation_id = uuid.uuid4().hex
    for role, text in turns:
        shared_memory.commit_message(conversation_id, text, role=role)
        shared_memory.add_knowledge(conversation_id, text)

    recalled = shared_memory.recall(conversation_id, query, 10_000)

    def total(items: list[MemoryItem], stored: Callable[[MemoryItem], int | None]) -> int:
        counts = [stored(item) for item in items]
        assert None not in counts
        return sum(count for count in counts if count is not None)

    knowledge_total = total(recalled.knowledge, lambda item: item.entry_tokens)
    hits_total = total(recalled.keyword_hits, lambda item: item.hit_tokens)
    assert cl100k_base_length(recalled.knowledge_text()) == knowledge_total
    assert cl100k_base_length(recalled.keyword_text()) == hits_total


def _flood(store: Memory, count: int) -> None:
    for i in range(count):
        store.commit_message("c1", f"status update {i}: all systems nominal")
    for i in range(3):
        store.commit_message("c1", f"status update: the zebra escaped again ({i})")


def test_very_frequent_words_are_left_out_when_rarer_ones_remain(
    make_memory: MemoryFactory,
) -> None:
    with make_memory() as pruned, make_memory(frequent_term_share=None) as exhaustive:
        _flood(pruned, 1200)
        _flood(exhaustive, 1200)
        query = "any status update on the zebra?"

        hits = pruned.search(query, "c1", limit=50)
        best = exhaustive.search(query, "c1", limit=3)

        assert [hit.text for hit in hits] == [hit.text for hit in best]
        assert all("zebra" in hit.text for hit in hits)
        assert len(exhaustive.search(query, "c1", limit=50)) == 50  # every update matches
        recalled = pruned.recall("c1", query, [0, 0, 0, 1000])
        assert [hit.text for hit in recalled.keyword_hits] == [hit.text for hit in best]


def test_a_query_of_only_frequent_words_keeps_them_all(make_memory: MemoryFactory) -> None:
    with make_memory() as memory:
        _flood(memory, 1200)
        assert len(memory.search("status update", "c1", limit=50)) == 50


def test_word_counts_are_taken_again_once_the_store_has_grown(
    make_memory: MemoryFactory,
) -> None:
    with make_memory() as memory:
        _flood(memory, 1200)
        assert len(memory.search("zebra status", "c1", limit=50)) == 3
        for i in range(300):  # zebras everywhere: no longer a rare word
            memory.commit_message("c1", f"zebra sighting {i}")
        hits = memory.search("zebra status", "c1", limit=400)
        assert len(hits) == 400
        assert any("zebra" not in hit.text for hit in hits)


def test_a_small_store_searches_with_every_word(make_memory: MemoryFactory) -> None:
    with make_memory() as memory:
        _flood(memory, 150)
        hits = memory.search("zebra status", "c1", limit=50)
        assert len(hits) == 50
        assert all("zebra" in hit.text for hit in hits[:3])


def test_frequent_term_share_must_be_a_share(make_memory: MemoryFactory) -> None:
    with pytest.raises(ValueError, match="frequent_term_share"):
        make_memory(frequent_term_share=0)
