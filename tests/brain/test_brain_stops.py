"""Every way a run stops: iterations, tokens, timeout, abort, a second concurrent run."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbrain import Chain, FunctionLLM, LLMReply, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.control import RunControl
from dcbrain.exceptions import AbortRequested, PlanCancelled, TFBrainBusyError, TFBrainError
from dcbrain.llm import LLMCallInfo, count_message_tokens
from dcbrain.usage import Usage
from support.brain_scripts import add, event_types, hanging_planner, plan, verdict


def test_max_iterations_fails_after_that_many_plannings() -> None:
    planner = ScriptedLLM([plan(f"return {n}") for n in range(3)])
    validator = ScriptedLLM([verdict(False, f"not {n}") for n in range(3)])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator, max_iterations=3)
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == ("failed", "max_iterations", None)
    assert result.iterations == 3 and len(result.plans) == 3
    assert result.suggestions == ["not 0", "not 1", "not 2"]
    assert result.last_result == 2
    stop = [e for e in result.events if e["type"] == "budget" and e.get("budget")]
    assert stop[-1]["budget"] == "max_iterations" and stop[-1]["exhausted"] is True


def test_max_tokens_refuses_the_planning_call_that_could_overrun() -> None:
    planner = ScriptedLLM([plan("return 1")], max_output_tokens=100)
    brain = DCBrain(default_llm=planner, max_tokens=200)  # the prompt alone is larger
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("failed", "max_tokens")
    assert planner.calls == [] and result.usage.total_tokens == 0
    refused = [e for e in result.events if e["type"] == "budget" and e.get("exhausted")]
    assert refused and refused[0]["requested"] > 200


def test_max_tokens_inside_a_plan_stops_the_run_without_validation() -> None:
    seen: list[str] = []
    chain_llm = FunctionLLM(lambda messages: seen.append("chain") or "x" * 10,
                            max_output_tokens=4000)
    big = Chain(name="big", llm=chain_llm, prompt="{{ text }}")
    planner = ScriptedLLM([plan("return big(text='hello')")], max_output_tokens=200)
    validator = ScriptedLLM([verdict(True)], max_output_tokens=50)
    brain = DCBrain(spec_chains={"big": big}, default_llm=planner, default_validate_llm=validator,
                    max_tokens=3000)
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("failed", "max_tokens")
    assert seen == [] and validator.calls == []
    assert result.usage.total_tokens <= 3000
    assert result.plans == ["return big(text='hello')"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_tokens=st.integers(min_value=1, max_value=6000),
    max_output=st.integers(min_value=1, max_value=600),
    completions=st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=30),
    solved_after=st.integers(min_value=1, max_value=6),
)
def test_spent_tokens_never_exceed_max_tokens(
    max_tokens: int, max_output: int, completions: list[int], solved_after: int
) -> None:
    """Random usage per call (up to each call's max output): the total stays in budget."""
    calls = {"n": 0, "validations": 0}

    def usage_for(messages: list[dict[str, Any]], info: LLMCallInfo, content: Any) -> LLMReply:
        limit = info.max_tokens if info.max_tokens is not None else max_output
        completion = min(completions[calls["n"] % len(completions)], limit)
        calls["n"] += 1
        text = content if isinstance(content, str) else ""
        return LLMReply(content=text, parsed=None if isinstance(content, str) else content,
                        usage=Usage.of_call("m", count_message_tokens(messages), completion))

    def main(messages: list[dict[str, Any]], info: LLMCallInfo) -> LLMReply:
        if "validator" in messages[0]["content"]:
            calls["validations"] += 1
            solved = calls["validations"] >= solved_after
            import json
            return usage_for(messages, info, json.dumps(verdict(solved, "again")))
        return usage_for(messages, info, plan("a, b = parallel(echo(text='1'), echo(text='2'))\n"
                                              "return a + b"))

    def chain_reply(messages: list[dict[str, Any]], info: LLMCallInfo) -> LLMReply:
        return usage_for(messages, info, "ok")

    echo = Chain(name="echo", llm=FunctionLLM(chain_reply, max_output_tokens=max_output),
                 prompt="{{ text }}")
    brain = DCBrain(spec_chains={"echo": echo},
                    default_llm=FunctionLLM(main, max_output_tokens=max_output),
                    max_tokens=max_tokens, max_iterations=8)
    result = brain.run("q", conversation_id="c1")
    assert result.usage.total_tokens <= max_tokens
    finished = [e for e in result.events if e["type"] == "call_finished" and e["kind"] == "llm"]
    assert sum(e["total_tokens"] for e in finished) == result.usage.total_tokens
    if result.reason == "max_tokens":
        assert result.status == "failed"


def test_timeout_zero_plans_exactly_once_and_raises_with_the_partial_result() -> None:
    planner = ScriptedLLM([plan("return add(a=1, b=1)"), plan("return 99")])
    validator = ScriptedLLM([verdict(False, "wrong")])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator, tools=[add], timeout=0)
    with pytest.raises(TFBrainError, match="timed out") as caught:
        brain.run("q", conversation_id="c1")
    partial = caught.value.result
    assert (partial.status, partial.reason) == ("failed", "timeout")
    assert partial.plans == ["return add(a=1, b=1)"] and partial.last_result == 2
    assert partial.suggestions == ["wrong"]
    assert len(planner.calls) == 1
    assert event_types(partial.events)[-1] == "final"
    assert not brain.busy


def test_timeout_zero_still_accepts_a_first_good_plan() -> None:
    brain = DCBrain(default_llm=ScriptedLLM([plan("return 1"), verdict(True)]), timeout=0)
    assert brain.run("q", conversation_id="c1").reason == "validated"


async def test_abort_during_the_planning_call() -> None:
    started, planner = hanging_planner()
    brain = DCBrain(default_llm=planner)
    run = asyncio.create_task(brain.async_run("q", conversation_id="c1"))
    await started.wait()
    assert brain.abort() is True
    result = await run
    assert (result.status, result.reason) == ("aborted", "aborted")
    states = [e["dest"] for e in result.events if e["type"] == "state_changed"]
    assert states[-1] == "aborted" and not brain.busy


async def test_abort_mid_plan_cancels_the_plan() -> None:
    brain: DCBrain
    reached: list[str] = []

    async def wait_for_user() -> str:
        """Blocks until cancelled."""
        reached.append("tool")
        brain.abort()
        await asyncio.Event().wait()
        return "never"

    def after() -> str:
        """Must not run."""
        reached.append("after")
        return "x"

    planner = ScriptedLLM([plan("a = wait_for_user()\nb = after()\nreturn a + b")])
    validator = ScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator,
                    tools=[wait_for_user, after])
    result = await brain.async_run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("aborted", "aborted")
    assert reached == ["tool"] and validator.calls == []
    assert result.plans == ["a = wait_for_user()\nb = after()\nreturn a + b"]
    assert brain.contextual_plan_info("c1")[-1]["plan"] == result.plans[0]
    await _plan_threads_finished()


async def test_an_abort_asked_during_a_call_lets_no_later_call_start() -> None:
    """The call in flight ends and is recorded; the abort stops the plan as it returns,
    before the run's cancellation has reached the plan's thread."""
    brain: DCBrain
    reached: list[str] = []

    def stop_after_me() -> str:
        """Asks the abort, then returns at once."""
        reached.append("tool")
        assert brain.abort() is True
        return "done"

    def after(text: str) -> str:
        """Must not run."""
        reached.append("after")
        return text

    source = "a = stop_after_me()\nreturn after(text=a)"
    validator = ScriptedLLM([verdict(True)])
    for _ in range(20):  # the plan's thread races the loop: lost once is lost
        reached.clear()
        brain = DCBrain(default_llm=ScriptedLLM([plan(source)]), default_validate_llm=validator,
                        tools=[stop_after_me, after])
        result = await brain.async_run("q", conversation_id="c1")
        assert (result.status, result.reason) == ("aborted", "aborted")
        assert reached == ["tool"]
        started = [e["name"] for e in result.events
                   if e["type"] == "call_started" and e["kind"] != "llm"]
        finished = [e for e in result.events
                    if e["type"] == "call_finished" and e["name"] == "stop_after_me"]
        assert started == ["stop_after_me"]
        assert len(finished) == 1
    assert validator.calls == []
    await _plan_threads_finished()


async def test_work_that_fails_after_an_abort_was_asked_ends_as_the_abort() -> None:
    """The plan may stop for the abort (its calls ask the flag) and fail before the
    cancellation of its task lands: that is the abort, not a failed attempt."""
    control = RunControl()
    control.start(asyncio.get_running_loop())

    async def stopped_for_the_abort() -> None:
        assert control.request_abort() is True
        raise PlanCancelled("plan was cancelled")  # before the cancel scheduled above runs

    with pytest.raises(AbortRequested):
        await control.interruptible("run", stopped_for_the_abort())


async def test_work_that_fails_without_an_abort_keeps_its_error() -> None:
    control = RunControl()
    control.start(asyncio.get_running_loop())

    async def failing() -> None:
        raise PlanCancelled("plan was cancelled")

    with pytest.raises(PlanCancelled):
        await control.interruptible("run", failing())
    assert control.abort_asked() is False


async def _plan_threads_finished() -> None:
    """A cancelled plan's thread reports back to the loop; keep the loop open until it has."""
    for _ in range(1000):
        if not any(t.name == "tf_plan" for t in threading.enumerate()):
            return
        await asyncio.sleep(0.01)


async def test_two_concurrent_runs_on_one_instance_both_succeed() -> None:
    gate = asyncio.Event()
    entered: list[str] = []

    async def planner(messages: list[dict[str, Any]]) -> str:
        question = messages[-1]["content"]
        entered.append(question)
        if len(entered) == 2:
            gate.set()
        await gate.wait()  # both runs are in their planning call at once
        return f"answer to {question}"

    brain = DCBrain(default_llm=FunctionLLM(planner))
    first, second = await asyncio.gather(brain.async_run("q1", conversation_id="c1"),
                                         brain.async_run("q2", conversation_id="c2"))
    assert (first.final_result, second.final_result) == ("answer to q1", "answer to q2")
    assert first.run_id != second.run_id and not brain.busy
    assert {e["run_id"] for e in first.events} == {first.run_id}
    assert {e["run_id"] for e in second.events} == {second.run_id}


async def test_a_second_concurrent_run_of_one_conversation_is_refused() -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def planner(messages: list[dict[str, Any]]) -> str:
        entered.set()
        await gate.wait()
        return "first answer"

    brain = DCBrain(default_llm=FunctionLLM(planner))
    first = asyncio.create_task(brain.async_run("q1", conversation_id="c1"))
    await entered.wait()
    with pytest.raises(TFBrainBusyError, match="one at a time"):
        await brain.async_run("q2", conversation_id="c1")
    gate.set()
    result = await first
    assert result.final_result == "first answer" and result.conversation_id == "c1"
    third = await brain.async_run("q3", conversation_id="c1")  # the conversation is free again
    assert third.final_result == "first answer"


async def test_a_run_takes_the_callers_run_id() -> None:
    brain = DCBrain(default_llm=ScriptedLLM(["an answer"]))
    result = await brain.async_run("q", conversation_id="c1", run_id="my-run")
    assert result.run_id == "my-run"
    assert {e["run_id"] for e in result.events} == {"my-run"}


async def test_two_hundred_brains_run_concurrently() -> None:
    brains = []
    for index in range(200):
        planner = ScriptedLLM([plan(f"a, b = parallel(add(a={index}, b=1), add(a=0, b=0))\n"
                                    "return a + b"), verdict(True)])
        brains.append(DCBrain(default_llm=planner, tools=[add]))
    results = await asyncio.gather(
        *(brain.async_run(f"q{i}", conversation_id=f"c{i}") for i, brain in enumerate(brains))
    )
    assert [r.final_result for r in results] == [i + 1 for i in range(200)]
    assert {r.status for r in results} == {"succeeded"}
    assert len({r.run_id for r in results}) == 200
