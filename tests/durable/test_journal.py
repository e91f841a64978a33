"""Replaying a run from its stored journal: same calls, same clock, same memory, or a loud stop."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from dcbrain import ScriptedLLM, SQLiteMemory
from dcbrain.brain import BrainResult, DCBrain, RunDeps
from dcbrain.durable import DurableStore
from dcbrain.durable.journal import JournalDivergence, RecordedMemory, RunJournal
from dcbrain.journal import JournalEntry, JournalKey
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.durable_brains import CountingTools
from support.durable_harness import Backend

PARALLEL_PLAN = (
    "a, b, c = parallel(step_one(x=1), step_two(x=10), step_three(x=100))\n"
    "d, e = parallel(step_one(x=a), step_two(x=b))\n"
    "return a + b + c + d + e"
)


def _execute(brain: DCBrain, store: DurableStore, run_id: str, question: str = "q"
             ) -> BrainResult:
    """One execution of the run as a worker does it: the journal, clock and recorded
    memory of the run are its own dependencies; a timeout's result is returned."""
    journal = RunJournal(store, run_id)
    memory = None if brain.memory is None else RecordedMemory(brain.memory, journal)
    deps = RunDeps(memory=memory, journal=journal.calls, clock=journal.clock)

    async def execute() -> BrainResult:
        async with brain.start_run(question, "c1", run_id=run_id, deps=deps) as run:
            return await run.execute()

    return asyncio.run(execute())


def _record(store: DurableStore, run_id: str, entry: JournalEntry) -> None:
    store.record_journal(run_id, f"call|{entry.key.text}",
                         {"type": "call", "entry": entry.to_dict()})


def test_a_replay_of_parallel_branches_executes_no_call_again(
    backend: Backend, tmp_path: Path
) -> None:
    for attempt in range(4):  # branches finish in a different order every time
        tools = CountingTools(tmp_path / f"counters{attempt}")
        tools.jitter = random.Random(attempt)
        run_id = f"run{attempt}"
        first = _execute(tools.brain(PARALLEL_PLAN), backend.store, run_id)
        replay = _execute(tools.brain(PARALLEL_PLAN), backend.store, run_id)
        assert first.status == replay.status == "succeeded"
        assert replay.final_result == first.final_result == 2 + 11 + 101 + 3 + 12
        started = [tools.count(n, "started") for n in ("step_one", "step_two", "step_three")]
        assert started == [2, 2, 1]  # the first execution's calls only


def test_a_replay_of_a_replan_that_reused_a_call_executes_no_call_again(
    backend: Backend, counting: CountingTools
) -> None:
    def brain() -> DCBrain:
        planner = ScriptedLLM([plan("a = step_one(x=1)\nreturn step_two(x=a)"),
                               plan("a = step_one(x=1)\nreturn step_three(x=a)")])
        return DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM(
            [verdict(False, "again"), verdict(True)]), tools=counting.tools())

    first = _execute(brain(), backend.store, "p1")
    replay = _execute(brain(), backend.store, "p1")  # step_one of attempt 2 was reused
    assert (first.iterations, first.final_result) == (2, 3)
    assert (replay.status, replay.iterations, replay.final_result) == ("succeeded", 2, 3)
    started = [counting.count(n, "started") for n in ("step_one", "step_two", "step_three")]
    assert started == [1, 1, 1]


HOSTILE_ARGUMENTS_PLAN = (
    'values = [float("nan"), "nan", (1, 2), [1, 2], {1: "a"}, {"1": "a"}, "\\ud800",\n'
    '          "x" * 5000 + "a", "x" * 5000 + "b", {"$tuple": [1, 2]}]\n'
    "return [note(value=v) for v in values]"
)


def test_a_replay_finds_the_stored_keys_of_calls_with_look_alike_arguments(
    backend: Backend
) -> None:
    noted: list[Any] = []

    def note(value: Any) -> int:
        """Notes a value; returns how many it has noted."""
        noted.append(value)
        return len(noted)

    def brain() -> DCBrain:
        return DCBrain(default_llm=ScriptedLLM([plan(HOSTILE_ARGUMENTS_PLAN)]),
                       default_validate_llm=ScriptedLLM([verdict(True)]), tools=[note])

    first = _execute(brain(), backend.store, "h1")
    replay = _execute(brain(), backend.store, "h1")
    assert first.final_result == replay.final_result == list(range(1, 11))
    assert len(noted) == 10  # the replay ran none of them again
    keys = [row["entry"]["key"]["args"] for row in backend.store.journal("h1")
            if row.get("type") == "call" and row["entry"]["key"]["name"] == "note"]
    assert len(set(keys)) == 10


def test_a_lookup_of_another_call_than_the_recorded_one_fails_loudly(
    backend: Backend
) -> None:
    key = JournalKey(1, "", "step_one", '{"x":1}', 0)
    _record(backend.store, "r1", JournalEntry(key, "tool", True, result=2))
    journal = RunJournal(backend.store, "r1")
    other = JournalKey(1, "", "step_one", '{"x":2}', 0)
    with pytest.raises(JournalDivergence, match="step_one"):
        journal.calls.lookup(other)
    assert journal.calls.lookup(key) is not None  # the recorded one is served
    assert journal.calls.lookup(other) is None  # after it, new calls run live


def test_a_diverging_replay_stops_the_run_instead_of_running_calls_live(
    backend: Backend, counting: CountingTools
) -> None:
    planner = JournalKey(1, "", "__planner__", "", 0)
    _record(backend.store, "d1", JournalEntry(
        planner, "llm", True, result="```tf_plan\nreturn step_two(x=step_one(x=5))\n```"))
    _record(backend.store, "d1", JournalEntry(
        JournalKey(1, "", "step_one", '{"x":1}', 0), "tool", True, result=2))
    with pytest.raises(JournalDivergence, match="step_one"):
        _execute(counting.brain(), backend.store, "d1")
    assert counting.count("step_one", "started") == 0
    assert counting.count("step_two", "started") == 0


def test_the_time_budget_is_decided_on_recorded_time(
    backend: Backend, tmp_path: Path
) -> None:
    tools = CountingTools(tmp_path / "counters", delay_s=0.4)

    def brain() -> DCBrain:
        planner = ScriptedLLM([plan("a = step_one(x=1)\nb = step_two(x=a)\nreturn b"),
                               plan("return step_three(x=1)")])
        return DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM(
            [verdict(False, "again"), verdict(True)]), tools=tools.tools(), timeout=0.5)

    first = _execute(brain(), backend.store, "t1")
    tools.delay_s = 0.0  # were the clock read live, the budget would now allow a replan
    replay = _execute(brain(), backend.store, "t1")
    assert first.reason == replay.reason == "timeout"
    assert replay.iterations == first.iterations
    assert tools.count("step_three", "started") == 0


def test_memory_commits_happen_once_and_recall_answers_as_recorded(
    backend: Backend, counting: CountingTools, tmp_path: Path
) -> None:
    memory = SQLiteMemory(tmp_path / "memory.db")
    _execute(counting.brain(memory=memory), backend.store, "m1", "count")
    memory.commit_message("c1", "said later")  # a live recall would now see it
    replay = _execute(counting.brain(memory=memory), backend.store, "m1", "count")
    assert [m.content for m in memory.messages("c1")] == ["count", "4", "said later"]
    assert replay.final_result == 4
    recalls = [r for r in backend.store.journal("m1") if r.get("type") == "recall"]
    assert len(recalls) == 1
    memory.close()


class _Crash(BaseException):
    """The worker's process dying mid-call: nothing after it runs or is recorded."""


def test_a_replay_of_a_call_cut_off_between_tries_makes_only_the_tries_left(
    backend: Backend,
) -> None:
    tries: list[str] = []

    def brain(*outcomes: BaseException | None) -> DCBrain:
        left = list(outcomes)

        def notify(user: str) -> str:
            """Notify a user."""
            tries.append(user)
            outcome = left.pop(0) if left else None
            if outcome is not None:
                raise outcome
            return f"notified {user}"

        return DCBrain(default_llm=ScriptedLLM([plan('return notify(user="ann")')]),
                       default_validate_llm=ScriptedLLM([verdict(True)]),
                       tools=[Tool(notify, retries=3, backoff=0)])

    with pytest.raises(_Crash):
        _execute(brain(ConnectionError("reset"), _Crash()), backend.store, "t1")
    rows = [row["entry"]["key"] for row in backend.store.journal("t1") if row["type"] == "call"]
    assert [(key["name"], key.get("failed_try", 0)) for key in rows] == [
        ("__planner__", 0), ("notify", 1)]
    replay = _execute(brain(), backend.store, "t1")
    assert (replay.status, replay.final_result) == ("succeeded", "notified ann")
    assert len(tries) == 3  # the failed try, the cut-off one, then one more
