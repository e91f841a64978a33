"""Memory commits and recall, and the per-conversation deque of failed attempts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.context import (
    BrainContext,
    BrainIntermediateResult,
    ContextualPlanInfo,
    contextual_plan_info_key,
)
from dcbrain.memory import SQLiteMemory
from dcbrain.messages import TextMessage
from support.brain_scripts import plan, verdict


def test_input_and_answer_are_committed_and_recalled_next_time(tmp_path: Path) -> None:
    with SQLiteMemory(tmp_path / "brain.db") as memory:
        memory.add_knowledge("c1", "The office cat is called Miso.")
        memory.add_document("c1", "Quarterly report: revenue grew 12 percent.", source="q3.txt")
        planner = ScriptedLLM(["Miso.", "It grew 12 percent."])
        brain = DCBrain(default_llm=planner, memory=memory)
        brain.run("What is the cat called?", conversation_id="c1")
        brain.run("How did revenue do?", conversation_id="c1")
        messages = [(m.role, m.content) for m in memory.messages("c1")]
        assert messages == [
            ("user", "What is the cat called?"), ("assistant", "Miso."),
            ("user", "How did revenue do?"), ("assistant", "It grew 12 percent."),
        ]
        second = planner.calls[1]
        assert {"role": "user", "content": "What is the cat called?"} in second
        assert {"role": "assistant", "content": "Miso."} in second
        assert second[-1] == {"role": "user", "content": "How did revenue do?"}
        text = "\n".join(m["content"] for m in second)
        assert "The office cat is called Miso." in text  # KnowledgePrompt
        assert "[q3.txt] Quarterly report: revenue grew 12 percent." in text  # documents
        assert memory.messages("c2") == []


def test_a_failed_run_commits_its_outcome() -> None:
    with SQLiteMemory(":memory:") as memory:
        planner = ScriptedLLM([plan("return 1"), verdict(False, "use 2")])
        DCBrain(default_llm=planner, memory=memory, max_iterations=1).run("q", "c1")
        last = memory.messages("c1")[-1]
        assert last.role == "assistant"
        assert last.content == "(no answer: max_iterations) use 2"
        assert last.additional_kwargs["status"] == "failed"


def test_failed_attempts_are_kept_per_conversation_at_most_ten() -> None:
    replies: list[object] = []
    for n in range(12):
        replies += [plan(f"return {n}"), verdict(False, f"try {n + 1}")]
    brain = DCBrain(default_llm=ScriptedLLM(replies), max_iterations=12)
    brain.run("q", conversation_id="c1")
    kept = brain.contextual_plan_info("c1")
    assert len(kept) == 10
    assert [a["plan"] for a in kept] == [f"return {n}" for n in range(2, 12)]
    assert kept[-1] == {"plan": "return 11", "result": "11", "error": "", "suggestion": "try 12"}
    assert brain.contextual_plan_info("c2") == []


def test_earlier_failures_reach_the_next_run_of_the_same_conversation_only() -> None:
    planner = ScriptedLLM([plan("return 'wrong'"), verdict(False, "say right"),
                           "right", "other", "third"])
    brain = DCBrain(default_llm=planner, max_iterations=1)
    assert brain.run("q", conversation_id="c1").reason == "max_iterations"
    brain.run("q", conversation_id="c2")
    assert "return 'wrong'" not in planner.calls[2][0]["content"]
    brain.run("q", conversation_id="c1")
    c1_prompt = planner.calls[3][0]["content"]
    assert "### Attempt 1\n```tf_plan\nreturn 'wrong'\n```" in c1_prompt
    assert "The validator's suggestion: say right" in c1_prompt


def test_success_clears_the_conversations_failed_attempts() -> None:
    planner = ScriptedLLM([plan("return 1"), verdict(False, "no"), plan("return 2"),
                           verdict(True)])
    brain = DCBrain(default_llm=planner)
    brain.run("q", conversation_id="c1")
    assert brain.contextual_plan_info("c1") == []


def test_an_interpreter_error_is_recorded_as_a_failed_attempt() -> None:
    planner = ScriptedLLM([plan("return 1 / 0")])
    brain = DCBrain(default_llm=planner, max_iterations=1)
    brain.run("q", conversation_id="c1")
    [attempt] = brain.contextual_plan_info("c1")
    assert attempt["plan"] == "return 1 / 0" and "ZeroDivisionError" in attempt["error"]


def test_failed_attempts_are_shared_by_brains_on_one_database(tmp_path: Path) -> None:
    path = tmp_path / "brain.db"
    with SQLiteMemory(path) as first_store, SQLiteMemory(path) as second_store:
        failing = DCBrain(default_llm=ScriptedLLM([plan("return 'wrong'"),
                                                   verdict(False, "say right"),
                                                   plan("return 0"), verdict(False, "no")]),
                          memory=first_store, max_iterations=1)
        planner = ScriptedLLM([plan("return 'right'"), verdict(True)])
        succeeding = DCBrain(default_llm=planner, memory=second_store)

        assert failing.run("q", conversation_id="c1").status == "failed"
        failing.run("q", conversation_id="c2")

        assert succeeding.contextual_plan_info("c1") == [
            {"plan": "return 'wrong'", "result": "wrong", "error": "", "suggestion": "say right"}]
        assert succeeding.run("q", conversation_id="c1").ok
        assert "### Attempt 1\n```tf_plan\nreturn 'wrong'\n```" in planner.calls[0][0]["content"]
        assert failing.contextual_plan_info("c1") == []  # success cleared it for every brain
        assert len(failing.contextual_plan_info("c2")) == 1  # another conversation's stay
        assert first_store.get_value(contextual_plan_info_key("c1")) is None


def test_an_aborted_run_keeps_its_attempt_for_the_next_process(tmp_path: Path) -> None:
    path = tmp_path / "brain.db"
    with SQLiteMemory(path) as store:
        brain = DCBrain(default_llm=ScriptedLLM([plan("return 1 / 0")]), memory=store,
                        max_iterations=1)
        brain.run("q", conversation_id="c1")
    with SQLiteMemory(path) as reopened:
        [attempt] = DCBrain(default_llm=ScriptedLLM([]), memory=reopened) \
            .contextual_plan_info("c1")
    assert attempt["plan"] == "return 1 / 0" and "ZeroDivisionError" in attempt["error"]


def test_a_store_that_fails_keeps_the_attempts_in_the_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteMemory(tmp_path / "brain.db")
    store.close()  # every read and write of the store now raises
    info = ContextualPlanInfo(store=store)
    ir = BrainIntermediateResult(BrainContext(TextMessage("q"), "c1", "r1"),
                                 current_plan="return 1")

    info.record(ir)

    assert [a["plan"] for a in info.of("c1")] == ["return 1"]
    assert "could not store the failed attempts of conversation 'c1'" in caplog.text
    info.clear("c1")
    assert info.of("c1") == []


def test_stored_attempts_of_an_unknown_shape_are_ignored(tmp_path: Path) -> None:
    with SQLiteMemory(tmp_path / "brain.db") as store:
        store.put_value(contextual_plan_info_key("c1"),
                        [{"plan": "return 1", "result": 1, "extra": "x"}, "junk", 3])
        assert ContextualPlanInfo(store=store).of("c1") == [
            {"plan": "return 1", "result": "1", "error": "", "suggestion": ""}]
        store.put_value(contextual_plan_info_key("c2"), {"not": "a list"})
        assert ContextualPlanInfo(store=store).of("c2") == []
