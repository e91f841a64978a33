"""A run lets go of what it made as it ends: nothing of it waits for Python's cyclic
collector (which runs seldom, and then scans every object of the process), whether it
succeeds at once, after a failed plan, or ends with an LLM's error or at its token
budget. The plan's interpreter and its callables, the builtins and guards of a plan run,
the streamed plan's event maker, the copies a call's result is measured by and the
errors a plan run, an LLM call or the budget ended with are each freed by reference
counting; a failed attempt's error is kept without the frames that held the attempt."""

from __future__ import annotations

import gc
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.context import BrainContext, BrainIntermediateResult
from dcbrain.brain.control import RunControl
from dcbrain.brain.running import forget_frames, run_plan
from dcbrain.brain.trace import RunRecorder
from dcbrain.exceptions import TFLLMError
from dcbrain.llm import StreamingScriptedLLM
from dcbrain.messages import TextMessage
from dcbrain.tfplan.errors import TFInterpreterError
from dcbrain.tools import Tool
from support.brain_scripts import add, plan, verdict

# ``lookup``'s record is measured and copied for the plan and for the journal
PLAN = ('x = add(a=1, b=2)\nfound = lookup(key="k")\ny = add(a=x, b=found["values"][0])\n'
        'return {"sum": y, "parts": [x, y], "found": found["key"]}')


def lookup(key: str) -> dict[str, Any]:
    return {"key": key, "values": [1, 2, {"nested": ["a", "b"]}]}


def _brain(isolation: str, runs: int) -> DCBrain:
    planner = ScriptedLLM([plan(PLAN + "\n# " + str(n)) for n in range(runs)])
    validator = ScriptedLLM([verdict(True)] * runs)
    return DCBrain(default_plan_llm=planner, default_validate_llm=validator,
                   tools=[add, lookup], isolation=isolation)  # type: ignore[arg-type]


@contextmanager
def collected_garbage() -> Iterator[list[Any]]:
    """The objects only the cyclic collector could free, of what ran inside."""
    gc.collect()
    found: list[Any] = []
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _ours(garbage: list[Any]) -> list[str]:
    """What of ``garbage`` is dcbrain's: its objects, and functions and frames of its code
    (another library's garbage, made meanwhile by another thread, is not counted)."""
    names = []
    for item in garbage:
        code = getattr(item, "f_code", None) or getattr(item, "__code__", None)
        module = type(item).__module__ or ""
        if module.startswith("dcbrain") or (code is not None and "dcbrain" in code.co_filename):
            names.append(getattr(item, "__qualname__", type(item).__qualname__))
    return names


def collected_run(brain: DCBrain) -> tuple[Any, list[str]]:
    """``brain``'s run of a question (after a first run that loaded what runs load
    lazily), and what of it only the cyclic collector could free."""
    with collected_garbage() as garbage:
        result = brain.run("the question", "c1")
    return result, _ours(garbage)


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_validated_run_leaves_nothing_for_the_cyclic_collector(isolation: str) -> None:
    brain = _brain(isolation, 2)
    assert brain.run("warm up", "c0").final_result == {"sum": 4, "parts": [3, 4],
                                                        "found": "k"}
    result, leftover = collected_run(brain)
    assert (result.status, result.reason) == ("succeeded", "validated")
    assert leftover == []


def test_a_kept_error_holds_no_frame_locals() -> None:
    class Held:
        pass

    def inner(held: Held) -> None:
        raise ValueError("inner")

    def outer() -> None:
        held = Held()
        try:
            inner(held)
        except ValueError as exc:
            raise RuntimeError("outer") from exc

    with pytest.raises(RuntimeError) as caught:
        outer()
    error = caught.value
    forget_frames(error)
    frames = []
    for each in (error, error.__cause__):
        assert each is not None
        tb = each.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
    assert {frame.f_code.co_name for frame in frames} >= {"outer", "inner"}
    assert all(not any(isinstance(value, Held) for value in frame.f_locals.values())
               for frame in frames)


async def test_a_failed_attempt_keeps_its_error_without_the_attempt() -> None:
    class Attempt:
        """What the frames of a plan run hold (its interpreter, its state)."""

    class FailingInterpreter:
        async def aevaluate(self, plan: str) -> None:
            attempt = Attempt()  # a local of a frame the error passes through
            raise TFInterpreterError(f"{plan} failed with {type(attempt).__name__}")

    ir = BrainIntermediateResult(context=BrainContext(
        current_input=TextMessage(content="q"), conversation_id="c", run_id="r"))
    ir.current_plan = "return 1"
    events: list[Any] = []
    recorder = RunRecorder("r", [events.append], spans=False)
    await run_plan(ir, FailingInterpreter(), recorder, RunControl())  # type: ignore[arg-type]

    error = ir.interpreter_err
    assert isinstance(error, TFInterpreterError)
    assert str(error).endswith("return 1 failed with Attempt")
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    assert "run_plan" not in [frame.f_code.co_name for frame in frames]  # it holds ``ir``
    assert "aevaluate" in [frame.f_code.co_name for frame in frames]
    assert not any(isinstance(value, Attempt) for frame in frames
                   for value in frame.f_locals.values())
    assert "".join(traceback.format_exception(error)).count("failed with Attempt") == 1


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_run_whose_first_plan_fails_leaves_nothing_for_the_cyclic_collector(
        isolation: str) -> None:
    failures = {"left": 0}

    def flaky(key: str) -> str:
        if failures["left"]:
            failures["left"] -= 1
            raise TimeoutError("the service timed out")
        return key.upper()

    runs = 2
    replies = [plan(f'v = flaky(key="k")\nreturn v  # {n} {attempt}')
               for n in range(runs) for attempt in (1, 2)]
    brain = DCBrain(default_plan_llm=ScriptedLLM(replies),
                    default_validate_llm=ScriptedLLM([verdict(True)] * runs),
                    tools=[flaky], isolation=isolation)  # type: ignore[arg-type]
    failures["left"] = 1
    assert brain.run("warm up", "c0").final_result == "K"
    failures["left"] = 1
    result, leftover = collected_run(brain)
    assert (result.status, result.reason, result.final_result) == ("succeeded", "validated",
                                                                   "K")
    assert result.iterations == 2
    assert leftover == []


class _ProviderDown(ScriptedLLM):
    async def _achat(self, messages: list[dict[str, Any]], **options: Any) -> Any:
        raise TFLLMError("the provider is down")


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_run_an_llm_error_ends_leaves_nothing_for_the_cyclic_collector(
        isolation: str) -> None:
    runs = 2
    brain = DCBrain(default_plan_llm=ScriptedLLM([plan(f"return add(a=1, b={n})")
                                                  for n in range(runs)]),
                    default_validate_llm=_ProviderDown([]), tools=[add],
                    isolation=isolation)  # type: ignore[arg-type]
    assert brain.run("warm up", "c0").status == "failed"
    result, leftover = collected_run(brain)
    assert (result.status, result.reason) == ("failed", "error")
    assert "the provider is down" in (result.error or "")
    assert leftover == []


def look(key: str) -> str:
    """Read a value (no side effects: a streamed plan calls it early)."""
    return key.upper()


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_streamed_plan_run_early_leaves_nothing_for_the_cyclic_collector(
        isolation: str) -> None:
    runs = 2
    planner = StreamingScriptedLLM([plan(f'a = look(key="a")\nb = look(key="b")\n'
                                         f'return a + b  # {n}') for n in range(runs)])
    brain = DCBrain(default_plan_llm=planner,
                    default_validate_llm=ScriptedLLM([verdict(True)] * runs),
                    tools=[Tool(look, side_effects=False)], isolation=isolation)  # type: ignore[arg-type]
    assert brain.run("warm up", "c0").final_result == "AB"
    result, leftover = collected_run(brain)
    assert (result.status, result.reason, result.final_result) == ("succeeded", "validated",
                                                                   "AB")
    assert leftover == []


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_run_its_token_budget_stops_leaves_nothing_for_the_cyclic_collector(
        isolation: str) -> None:
    brain = DCBrain(default_plan_llm=ScriptedLLM([plan("return add(a=1, b=2)")] * 2),
                    default_validate_llm=ScriptedLLM([verdict(True)] * 2), tools=[add],
                    isolation=isolation, max_tokens=600)  # type: ignore[arg-type]
    assert brain.run("warm up", "c0").reason == "max_tokens"
    result, leftover = collected_run(brain)
    assert (result.status, result.reason) == ("failed", "max_tokens")
    assert "token budget exhausted" in (result.error or "")
    assert leftover == []
