"""The run journal: a replan never repeats finished work, and a replay runs nothing twice."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any

import pytest

from dcbrain import Chain, DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.brain import RunDeps
from dcbrain.journal import CallJournal, JournalEntry, current_call
from dcbrain.tools import Tool
from support.brain_scripts import brain_reusing_its_chain, plan, verdict


class Shop:
    """A support agent's tools; ``refund`` has a side effect that must happen once."""

    def __init__(self, jitter: float = 0.0) -> None:
        self.refunds: list[tuple[str, float]] = []
        self.lookups: list[str] = []
        self.keys: list[str | None] = []
        self.jitter = jitter
        self._lock = threading.Lock()

    def _wait(self) -> None:
        if self.jitter:
            time.sleep(random.uniform(0, self.jitter))

    def tools(self) -> list[Any]:
        def lookup(order_id: str) -> dict[str, Any]:
            """Look an order up."""
            self._wait()
            with self._lock:
                self.lookups.append(order_id)
            return {"order_id": order_id, "amount": 39.9, "email": f"{order_id}@example.org"}

        def refund(order_id: str, amount: float) -> dict[str, Any]:
            """Refund an order."""
            self._wait()
            call = current_call()
            with self._lock:
                self.refunds.append((order_id, amount))
                self.keys.append(call.idempotency_key if call else None)
                number = len(self.refunds)
            return {"refund_id": f"R{number}-{order_id}", "amount": amount}

        return [lookup, refund]


REFUND_THEN_KEYERROR = """\
order = lookup(order_id="A1")
receipt = refund(order_id="A1", amount=order["amount"])
return {"refund": receipt["refund_id"], "note": order["missing_field"]}"""

REFUND_AGAIN = """\
order = lookup(order_id="A1")
receipt = refund(order_id="A1", amount=order["amount"])
return {"refund": receipt["refund_id"], "email": order["email"]}"""


def refund_brain(shop: Shop, planner_replies: list[Any], validator_replies: list[Any],
                 **kwargs: Any) -> tuple[DCBrain, ScriptedLLM]:
    planner = ScriptedLLM(planner_replies)
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM(validator_replies),
                    tools=shop.tools(), **kwargs)
    return brain, planner


def calls(result: Any, name: str) -> list[dict[str, Any]]:
    return [e for e in result.events if e["type"] == "call_finished" and e["name"] == name]


def test_a_replan_after_a_failure_does_not_refund_twice() -> None:
    shop = Shop()
    brain, planner = refund_brain(
        shop, [plan(REFUND_THEN_KEYERROR), plan(REFUND_AGAIN)], [verdict(True)])
    result = brain.run("Refund order A1 and tell me the email", conversation_id="c1")
    assert (result.status, result.reason) == ("succeeded", "validated")
    assert shop.refunds == [("A1", 39.9)]  # one question, one refund
    assert shop.lookups == ["A1"]
    assert result.final_result == {"refund": "R1-A1", "email": "A1@example.org"}
    first, second = calls(result, "refund")
    assert (first["reused"], second["reused"]) == (False, True)
    assert second["result"] == {"refund_id": "R1-A1", "amount": 39.9}  # numbers stay numbers
    assert result.reused_calls == 2
    # the second planning prompt lists the recorded refund and says repeating it is free
    prompt = "\n".join(str(m["content"]) for m in planner.calls[1])
    assert 'refund(amount=39.9, order_id="A1") -> {"refund_id": "R1-A1", "amount": 39.9}' in prompt
    assert "returns the recorded result" in prompt
    assert "refund" not in "\n".join(str(m["content"]) for m in planner.calls[0]).split(
        "## Tools")[0]


def test_a_replan_after_the_validator_asks_for_more_reuses_the_refund() -> None:
    shop = Shop()
    partial = plan('order = lookup(order_id="A1")\n'
                   'receipt = refund(order_id="A1", amount=order["amount"])\n'
                   'return receipt["refund_id"]')
    brain, _ = refund_brain(shop, [partial, plan(REFUND_AGAIN)],
                            [verdict(False, "also give the email"), verdict(True)])
    result = brain.run("Refund order A1 and tell me the email", conversation_id="c1")
    assert result.status == "succeeded"
    assert shop.refunds == [("A1", 39.9)]


def test_failed_calls_are_never_reused() -> None:
    attempts: list[int] = []

    def flaky(n: int) -> int:
        """Fails the first time."""
        attempts.append(n)
        if len(attempts) == 1:
            raise RuntimeError("temporarily unavailable")
        return n * 2

    brain = DCBrain(default_llm=ScriptedLLM([plan("return flaky(n=2)"),
                                             plan("x = flaky(n=2)\nreturn x")]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[flaky])
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == 4 and attempts == [2, 2]
    assert [e["reused"] for e in calls(result, "flaky")] == [False, False]


def test_a_tool_can_opt_out_of_reuse() -> None:
    reads: list[str] = []

    def stock(item: str) -> int:
        """Current stock: must be read fresh every time."""
        reads.append(item)
        return 10 - len(reads)

    brain = DCBrain(default_llm=ScriptedLLM([plan('s = stock(item="x")\nreturn s["n"]'),
                                             plan('return stock(item="x")')]),
                    default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(stock, reuse=False)])
    result = brain.run("q", conversation_id="c1")
    assert reads == ["x", "x"] and result.final_result == 8


def test_identical_calls_in_one_plan_each_run_and_are_matched_by_occurrence() -> None:
    rolls: list[int] = []

    def roll() -> int:
        """A die roll: every call is a new roll."""
        rolls.append(len(rolls) + 1)
        return len(rolls)

    brain = DCBrain(
        default_llm=ScriptedLLM([plan("a = roll()\nb = roll()\nreturn [a, b, 1 / 0]"),
                                 plan("a = roll()\nb = roll()\nc = roll()\nreturn [a, b, c]")]),
        default_validate_llm=ScriptedLLM([verdict(True)]), tools=[roll])
    result = brain.run("q", conversation_id="c1")
    # the first two rolls of the new plan are the recorded ones; the third is new
    assert result.final_result == [1, 2, 3] and rolls == [1, 2, 3]


@pytest.mark.parametrize("round_", range(50))
def test_parallel_branches_match_their_own_entries_whatever_the_timing(round_: int) -> None:
    shop = Shop(jitter=0.004)

    def roll(side: str) -> str:
        """Identical calls in two branches: each branch must get its own recorded roll."""
        time.sleep(random.uniform(0, 0.004))
        return f"{side}-{random.random():.6f}"

    first = ('a, b, r1, r2 = parallel(refund(order_id="A", amount=1), '
             'refund(order_id="B", amount=2), roll(side="x"), roll(side="x"))\n'
             'print(r1, r2)\nreturn a["nope"]')
    second = ('a, b, r1, r2 = parallel(refund(order_id="A", amount=1), '
              'refund(order_id="B", amount=2), roll(side="x"), roll(side="x"))\n'
              'return [a["refund_id"], b["refund_id"], r1, r2]')
    brain = DCBrain(default_llm=ScriptedLLM([plan(first), plan(second)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[*shop.tools(), roll])
    result = brain.run("q", conversation_id=f"c{round_}")
    assert result.status == "succeeded"
    assert sorted(shop.refunds) == [("A", 1), ("B", 2)]
    refund_a, refund_b, r1, r2 = result.final_result
    assert refund_a.endswith("-A") and refund_b.endswith("-B")
    first_rolls = [e["result"] for e in calls(result, "roll") if not e["reused"]]
    reused = {e["path"]: e["result"] for e in calls(result, "roll") if e["reused"]}
    assert len(first_rolls) == 2 and sorted(reused.values()) == sorted(first_rolls)
    assert (r1, r2) == (reused["1.2"], reused["1.3"])


def test_a_chain_is_reused_with_its_intermediate_results() -> None:
    chain_llm = ScriptedLLM([{"summary": "short"}])
    brain = brain_reusing_its_chain(chain_llm)
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == "short" and len(chain_llm.calls) == 1
    assert [e["reused"] for e in calls(result, "summarize")] == [False, True]


def _journal_of(shop: Shop, run_id: str) -> list[JournalEntry]:
    """Run the refund question once more with a journal we keep, return its entries."""
    journal = CallJournal()
    brain, _ = refund_brain(shop, [plan(REFUND_THEN_KEYERROR), plan(REFUND_AGAIN)],
                            [verdict(True)])
    asyncio.run(brain.async_run("Refund order A1", conversation_id="c2", run_id=run_id,
                                deps=RunDeps(journal=journal)))
    return journal.entries()


def test_replayed_entries_keep_their_attempts_and_replay_exactly() -> None:
    shop = Shop()
    entries = _journal_of(shop, "run-7")
    kinds = [(entry.kind, entry.key.name, entry.key.attempt, entry.ok) for entry in entries]
    assert kinds == [
        ("llm", "__planner__", 1, True),
        ("tool", "lookup", 1, True),
        ("tool", "refund", 1, True),
        ("llm", "__planner__", 2, True),
        ("llm", "__validator__", 2, True),
    ]
    stored = [JournalEntry.from_dict(entry.to_dict()) for entry in entries]  # as JSON
    replay_shop = Shop()
    silent, _ = refund_brain(replay_shop, [], [])  # no LLM reply left: nothing may be asked
    result = asyncio.run(silent.async_run("Refund order A1", conversation_id="c3",
                                          run_id="run-7",
                                          deps=RunDeps(journal=CallJournal(stored))))
    assert result.final_result == {"refund": "R1-A1", "email": "A1@example.org"}
    assert replay_shop.refunds == []


def test_a_tool_reads_its_idempotency_key() -> None:
    shop = Shop()
    brain, _ = refund_brain(shop, [plan(REFUND_AGAIN)], [verdict(True)])
    brain.run("q", conversation_id="c1", run_id="r-42")
    [key] = shop.keys
    assert key is not None and key.startswith("r-42:1||refund|")
    assert key.endswith('|{"amount":39.9,"order_id":"A1"}|0')


def test_a_plan_identical_to_a_failed_one_is_not_run_again() -> None:
    shop = Shop()
    brain, planner = refund_brain(
        shop, [plan(REFUND_THEN_KEYERROR), plan(REFUND_THEN_KEYERROR + "\n"),
               plan(REFUND_AGAIN)], [verdict(True)])
    result = brain.run("q", conversation_id="c1")
    assert result.status == "succeeded" and shop.refunds == [("A1", 39.9)]
    skipped = [e for e in result.events if e["type"] == "plan_finished" and e.get("skipped")]
    assert len(skipped) == 1 and skipped[0]["error_kind"] == "repeated_plan"
    told = "\n".join(str(m["content"]) for m in planner.calls[2])
    assert "is the same as the plan of attempt 1" in told


def test_a_second_repeat_ends_the_run() -> None:
    shop = Shop()
    brain, _ = refund_brain(shop, [plan(REFUND_THEN_KEYERROR)] * 3, [])
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("failed", "repeated_plan")
    assert result.iterations == 3 and len(shop.refunds) == 1


@pytest.mark.parametrize("start", [100.0, 0.0])  # a clock may start at zero
def test_the_wall_time_budget_is_decided_on_the_run_clock(start: float) -> None:
    now = [start]

    def clock() -> float:
        return now[0]

    def slow_tool() -> int:
        """Takes an hour on the run's clock."""
        now[0] += 3600
        return 1

    brain = DCBrain(default_llm=ScriptedLLM([plan("return slow_tool()")] * 3),
                    default_validate_llm=ScriptedLLM([verdict(False, "again")] * 3),
                    tools=[slow_tool], timeout=60)
    with pytest.raises(Exception) as raised:
        asyncio.run(brain.async_run("q", conversation_id="c1",
                                   deps=RunDeps(clock=clock)))
    result = raised.value.result  # type: ignore[attr-defined]
    assert result.reason == "timeout" and result.iterations == 1
    assert result.duration_s == 3600


def test_the_planning_context_is_not_passed_to_chains() -> None:
    chain_llm = FunctionLLM(lambda messages: "described")
    describe = Chain(name="describe", llm=chain_llm, prompt="Tools: {{ tools }}")
    brain = DCBrain(spec_chains={"describe": describe},
                    default_llm=ScriptedLLM([plan("return describe()"), "ok"]),
                    default_validate_llm=ScriptedLLM([]), max_iterations=2)
    result = brain.run("q", conversation_id="c1")
    failed = [e for e in result.events if e["type"] == "plan_finished"]
    assert failed[0]["ok"] is False and "tools" in failed[0]["error"]
    assert "1:" in failed[0]["error"]  # a positioned static-check error
    assert chain_llm.calls == []


async def test_an_abort_closes_every_call_in_flight() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow(n: int) -> int:
        """Blocks until released."""
        started.set()
        release.wait(10)
        return n

    brain = DCBrain(default_llm=ScriptedLLM([plan("a, b = parallel(slow(n=1), slow(n=2))\n"
                                                  "return a + b")]),
                    tools=[slow])
    task = asyncio.create_task(brain.async_run("q", conversation_id="c1"))
    while not started.is_set():
        await asyncio.sleep(0.01)
    brain.abort()
    result = await task
    release.set()
    assert (result.status, result.reason) == ("aborted", "aborted")
    started_ids = {e["call_id"] for e in result.events if e["type"] == "call_started"}
    finished = {e["call_id"]: e for e in result.events if e["type"] == "call_finished"}
    assert started_ids and started_ids <= set(finished)
    assert {finished[c]["status"] for c in started_ids if c.startswith("call-")} == {"aborted"}
    assert result.events[-1]["type"] == "final"


NEST = ("deep_a = 0\ndeep_b = 1\n"
        "for _ in range(150):\n    deep_a = [deep_a]\n    deep_b = [deep_b]\n")


@pytest.mark.parametrize("earlier, later", [
    ('float("nan")', '"nan"'),
    ('float("inf")', '"inf"'),
    ("1", "1.0"),
    ("1", "True"),
    ("1", '"1"'),
    ("(1, 2)", "[1, 2]"),
    ('{1: "a"}', '{"1": "a"}'),
    ('{"$tuple": [1, 2]}', "(1, 2)"),
    ("None", '"None"'),
    ("deep_a", "deep_b"),  # they differ only 150 levels down
    ('"x" * 5000 + "a"', '"x" * 5000 + "b"'),
])
def test_a_replan_reuses_a_result_only_for_the_very_same_arguments(
    earlier: str, later: str
) -> None:
    received: list[Any] = []

    def note(value: Any) -> int:
        """Notes a value; returns how many it has noted."""
        received.append(value)
        return len(received)

    first = f"{NEST}a = note(value={earlier})\nreturn {{'a': a}}['missing']"
    second = f"{NEST}return note(value={later})"
    brain = DCBrain(default_llm=ScriptedLLM([plan(first), plan(second)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[note])
    result = brain.run("q", conversation_id="c1")
    assert result.status == "succeeded", result.final_result
    # the replan's call differs from the recorded one: it runs, it is not answered from it
    assert result.final_result == 2
    assert len(received) == 2
    assert [e["reused"] for e in calls(result, "note")] == [False, False]
