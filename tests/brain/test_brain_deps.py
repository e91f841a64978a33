"""A brain is configuration shared by runs; each run's own things travel in RunDeps."""

from __future__ import annotations

import asyncio

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.brain import RunDeps
from dcbrain.exceptions import TFBrainBusyError
from dcbrain.memory import SQLiteRunStore
from dcbrain.neural import Neural
from support.brain_scripts import add, plan, verdict


def test_a_run_started_with_start_run_is_unregistered_when_it_ends() -> None:
    brain = DCBrain(default_llm=ScriptedLLM(["first", "second"]))

    async def two_runs() -> list[str]:
        answers = []
        async with brain.start_run("q1", "c1") as run:
            assert brain.runs == [run]
            answers.append((await run.execute()).final_result)
        assert not brain.busy
        answers.append((await brain.async_run("q2", "c1")).final_result)  # not busy
        return answers

    assert asyncio.run(two_runs()) == ["first", "second"]


def test_two_runs_of_one_conversation_at_once_are_refused() -> None:
    brain = DCBrain(default_llm=ScriptedLLM([]))

    async def nested() -> None:
        async with brain.start_run("q1", "c1"), brain.start_run("q2", "c1"):
            pass

    with pytest.raises(TFBrainBusyError):
        asyncio.run(nested())
    assert not brain.busy


def test_failed_attempts_go_to_the_run_store_given_per_run(tmp_path: object) -> None:
    """A brain without a run store of its own keeps a run's failures where the run says."""
    store = SQLiteRunStore(f"{tmp_path}/runs.db")
    try:
        failing = DCBrain(default_llm=ScriptedLLM([plan("return add(a=1, b=1)"),
                                                   verdict(False, "wrong")]),
                          tools=[add], max_iterations=1)
        result = asyncio.run(failing.async_run("q", "c1", deps=RunDeps(run_store=store)))
        assert result.reason == "max_iterations"
        assert failing.contextual_plan_info("c1") == []  # not in this process
        other = DCBrain(default_llm=ScriptedLLM(["done"]), max_iterations=1)
        seen = other.failed_attempts(store).of("c1")
        assert [attempt["plan"] for attempt in seen] == ["return add(a=1, b=1)"]
    finally:
        store.close()


def test_the_mailbox_of_a_run_is_its_own() -> None:
    """New input posted to one run's mailbox stops that run only."""
    mailbox = Neural()
    mailbox.post_user_input("c1", "stop, please")
    brain = DCBrain(default_llm=ScriptedLLM(["an answer", "an answer"]))
    other = asyncio.run(brain.async_run("q", "c1"))
    assert other.status == "succeeded"
    with pytest.raises(Exception, match="new"):
        asyncio.run(brain.async_run("q", "c1", deps=RunDeps(mailbox=mailbox)))
