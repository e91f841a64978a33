"""SQLiteMemory stores conversations, documents and knowledge per conversation."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbrain.exceptions import TFMemoryError
from dcbrain.llm.tokens import cl100k_base_length
from dcbrain.memory import Memory, SQLiteMemory
from dcbrain.messages import TextMessage
from support.memory_backends import MemoryFactory


@pytest.fixture
def memory(make_memory: MemoryFactory) -> Memory:
    """Every test here that takes ``memory`` runs on SQLite and on PostgreSQL."""
    return make_memory()

def test_is_a_memory_and_creates_a_real_file(db_path: Path) -> None:
    with SQLiteMemory(db_path) as memory:
        assert isinstance(memory, Memory)
        assert db_path.exists()
        memory.commit_message("c1", "hello")
    with SQLiteMemory(db_path) as reopened:
        assert [m.content for m in reopened.messages("c1")] == ["hello"]


def test_messages_round_trip_role_content_time_and_kwargs(memory: Memory) -> None:
    question = TextMessage(
        content="what is 2+2?", additional_kwargs={"lang": "en", "n": [1, 2]}, created_at=100.5
    )
    memory.commit_message("c1", question)
    memory.commit_message("c1", "4", role="assistant")
    memory.commit_message("other", "not mine")

    messages = memory.messages("c1")

    assert [(m.role, m.content) for m in messages] == [("user", "what is 2+2?"), ("assistant", "4")]
    assert messages[0].additional_kwargs == {"lang": "en", "n": [1, 2]}
    assert messages[0].created_at == 100.5


def test_messages_limit_keeps_the_latest_in_chronological_order(memory: Memory) -> None:
    for i in range(5):
        memory.commit_message("c1", f"m{i}")
    assert [m.content for m in memory.messages("c1", limit=2)] == ["m3", "m4"]
    assert memory.messages("c1", limit=0) == []


def test_a_text_message_keeps_its_own_role(memory: Memory) -> None:
    memory.commit_message("c1", TextMessage(content="done", role="assistant"), role="user")
    assert memory.messages("c1")[0].role == "assistant"


def test_kwargs_that_json_cannot_hold_are_stored_as_text(memory: Memory) -> None:
    memory.commit_message("c1", TextMessage(content="x", additional_kwargs={"path": Path("/a")}))
    assert memory.messages("c1")[0].additional_kwargs == {"path": "/a"}


def test_unknown_conversation_is_empty_not_an_error(memory: Memory) -> None:
    assert memory.messages("nobody") == []
    assert memory.search("anything", "nobody") == []
    assert memory.recent("nobody", "knowledge") == []
    assert memory.recall("nobody", "anything").is_empty()


def test_long_documents_are_chunked_by_tokens(memory: Memory) -> None:
    paragraphs = [f"Paragraph {i} talks about topic{i} in some detail. " * 8 for i in range(30)]
    text = "\n\n".join(paragraphs)

    document_id = memory.add_document(
        "c1", text, source="manual.txt", metadata={"lang": "en"}, chunk_tokens=100
    )

    chunks = list(reversed(memory.recent("c1", "document", limit=1000)))
    assert len(chunks) > 1
    assert all(cl100k_base_length(chunk.text) <= 100 for chunk in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.document_id for c in chunks} == {document_id}
    assert {c.source for c in chunks} == {"manual.txt"}
    assert all(c.metadata == {"lang": "en"} for c in chunks)
    # Nothing is lost or reordered: the chunks hold every word in order.
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_a_single_unbroken_word_longer_than_a_chunk_is_still_split(memory: Memory) -> None:
    memory.add_document("c1", "x" * 5000, chunk_tokens=50)
    chunks = memory.recent("c1", "document", limit=1000)
    assert len(chunks) > 1
    assert all(cl100k_base_length(chunk.text) <= 50 for chunk in chunks)
    assert sum(len(chunk.text) for chunk in chunks) == 5000


def test_chunk_tokens_must_be_positive(memory: Memory) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        memory.add_document("c1", "text", chunk_tokens=0)


CORPUS = [
    "Our office is open Monday to Friday from 9am to 5pm.",
    "To reset your password, open Settings, choose Security and click Reset password.",
    "Invoices are sent by email on the first day of every month.",
    "The mobile app supports dark mode on Android and iOS.",
    "Shipping to Europe takes five to seven business days.",
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How can I reset my password?", 1),
        ("when do invoices arrive by email", 2),
        ("does the app have dark mode", 3),
        ("how long is shipping to Europe", 4),
        ("opening hours on Monday", 0),
    ],
)
def test_search_ranks_the_relevant_item_first(
    memory: Memory, query: str, expected: int
) -> None:
    for text in CORPUS:
        memory.add_knowledge("c1", text)

    hits = memory.search(query, "c1")

    assert hits[0].text == CORPUS[expected]
    assert hits[0].score is not None
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_search_stems_english_words(memory: Memory) -> None:
    memory.add_knowledge("c1", "The planner revises plans after each failure.")
    assert memory.search("planning failures", "c1")


def test_search_finds_chinese_text(memory: Memory) -> None:
    memory.add_knowledge("c1", "上海是中国最大的城市。")
    memory.add_knowledge("c1", "北京是中国的首都，有很多历史古迹。")
    memory.add_knowledge("c1", "The capital of France is Paris.")

    hits = memory.search("中国的首都是哪里？", "c1")

    assert hits[0].text.startswith("北京")


def test_search_is_scoped_by_conversation_and_kind(memory: Memory) -> None:
    memory.commit_message("c1", "apples in a message")
    memory.add_knowledge("c1", "apples in knowledge")
    memory.add_document("c1", "apples in a document")
    memory.add_knowledge("c2", "apples elsewhere")

    assert {hit.kind for hit in memory.search("apples", "c1")} == {
        "message",
        "document",
        "knowledge",
    }
    assert [hit.text for hit in memory.search("apples", "c1", kinds=["knowledge"])] == [
        "apples in knowledge"
    ]
    assert len(memory.search("apples")) == 4
    assert [hit.kind for hit in memory.search("apples", kinds=["knowledge", "knowledge",
                                                                 "message"])].count("document") == 0
    assert {hit.conversation_id for hit in memory.search("apples", kinds=["knowledge"])} == {
        "c1", "c2"}
    assert len(memory.search("apples", "c1", limit=2)) == 2
    assert len(memory.search("apples", "c1", limit=2, offset=2)) == 1


@pytest.mark.parametrize(
    "query",
    ['"', "AND", "OR NOT", "NEAR(a b", "*", "a*", "^start", "col:value", "-x", "'", "()", "{a b}"],
)
def test_fts_syntax_in_user_text_is_plain_text(memory: Memory, query: str) -> None:
    memory.add_knowledge("c1", "and or not near a b start col value x")
    memory.search(query, "c1")  # must not raise


def test_search_operators_are_matched_as_words(memory: Memory) -> None:
    memory.add_knowledge("c1", "please do not disturb")
    memory.add_knowledge("c1", "nothing to see here")
    assert [hit.text for hit in memory.search("NOT", "c1")] == ["please do not disturb"]


def test_a_query_without_words_finds_nothing(memory: Memory) -> None:
    memory.add_knowledge("c1", "anything")
    assert memory.search("?! ... ***", "c1") == []


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text())
def test_search_accepts_any_text(memory: Memory, query: str) -> None:
    memory.search(query, "c1")


def test_delete_conversation_removes_everything_of_it(memory: Memory) -> None:
    memory.commit_message("c1", "apples")
    memory.add_document("c1", "apples document")
    memory.add_knowledge("c1", "apples fact")
    memory.add_knowledge("c2", "apples elsewhere")

    assert memory.delete_conversation("c1") == 3

    assert memory.messages("c1") == []
    assert [hit.conversation_id for hit in memory.search("apples")] == ["c2"]


def test_a_closed_store_refuses_use(make_memory: MemoryFactory) -> None:
    store = make_memory()
    store.close()
    with pytest.raises(TFMemoryError, match="closed"):
        store.messages("c1")


def test_in_memory_store_is_shared_between_threads() -> None:
    store = SQLiteMemory(":memory:")
    threads = [
        threading.Thread(target=lambda i=i: store.commit_message("c1", f"m{i}")) for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(m.content for m in store.messages("c1")) == [f"m{i}" for i in range(8)]


async def test_async_variants_run_the_sync_ones(memory: Memory) -> None:
    await asyncio.gather(*(memory.acommit_message("c1", f"m{i}") for i in range(20)))
    await memory.aadd_knowledge("c1", "apples are red")
    await memory.aadd_document("c1", "bananas are yellow", source="fruit")

    assert len(await memory.amessages("c1")) == 20
    assert (await memory.asearch("apples", "c1"))[0].kind == "knowledge"
    assert (await memory.arecall("c1", "bananas")).documents[0].source == "fruit"
    assert await memory.adelete_conversation("c1") == 22
