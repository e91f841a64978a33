"""``return replan_with(value)``: a plan looks before it acts. The run goes back to the
planner with the value shown, without a validation and without a failed attempt."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dcbrain import DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.chain import TFChainInterpreter
from dcbrain.tfplan import TFInterpreterError
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict

TODO = "TODO: 1. pay the rent to ACME (IBAN DE01). 2. reply to Bob."


def read_inbox() -> str:
    """The newest email."""
    return TODO


def pay(iban: str, amount: int) -> str:
    """Pay ``amount`` to ``iban``."""
    return f"paid {amount} to {iban}"


def test_replan_with_goes_back_to_the_planner_without_a_verdict_or_a_failure() -> None:
    prompts: list[str] = []
    replies = [plan("return replan_with(read_inbox())"),
               plan('return pay(iban="DE01", amount=900)')]

    def planner(messages: list[dict[str, Any]]) -> str:
        prompts.append(messages[0]["content"])
        return replies[len(prompts) - 1]

    validator = ScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=FunctionLLM(planner), default_validate_llm=validator,
                    tools=[Tool(read_inbox, side_effects=False), pay], max_iterations=2)
    result = brain.run("Do what my newest email says", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "paid 900 to DE01")
    assert len(validator.calls) == 1  # the look was not validated
    second = prompts[1]
    assert "## What your plans looked up with replan_with\n" in second
    assert "### Attempt 1 (data from tool:read_inbox)\n```tf_plan\n" \
        "return replan_with(read_inbox())\n```\nIt handed back:\n" + TODO in second
    assert "Earlier attempts that did not solve the question" not in second
    assert "Planning attempts left, this one included: 1 of 2." in second
    assert [event["type"] for event in result.events].count("validation") == 1


def test_without_untrusted_data_shown_the_planner_gets_a_placeholder() -> None:
    prompts: list[str] = []

    def planner(messages: list[dict[str, Any]]) -> str:
        prompts.append(messages[0]["content"])
        return plan("return replan_with(read_inbox())") if len(prompts) == 1 else "done"

    brain = DCBrain(default_llm=FunctionLLM(planner), tools=[read_inbox],
                    show_untrusted_to_planner=False)
    brain.run("q", conversation_id="c1")
    assert "It handed back:\n<untrusted str of 59 characters from tool:read_inbox>" \
        in prompts[1]
    assert TODO not in prompts[1]


def test_a_long_value_is_cut_to_the_prompt_budget() -> None:
    prompts: list[str] = []

    def planner(messages: list[dict[str, Any]]) -> str:
        prompts.append(messages[0]["content"])
        return plan('return replan_with("x" * 100000)') if len(prompts) == 1 else "done"

    DCBrain(default_llm=FunctionLLM(planner), max_tokens=20_000).run("q", conversation_id="c")
    assert "more characters not shown)" in prompts[1]
    assert prompts[1].count("x") < 40_000


def test_replan_with_ends_the_plan_and_is_checked_where_it_stands() -> None:
    interpreter = TFChainInterpreter({}, tools=[read_inbox])
    assert interpreter.check("text = read_inbox()\nif 'TODO' in text:\n"
                             "    return replan_with(text)\nreturn 1") == []
    assert interpreter.check("replan_with(read_inbox())") == []
    messages = [problem.message for problem in interpreter.check(
        "x = replan_with(1)\ndef f():\n    return replan_with(2)\nreturn replan_with(1, 2)")]
    assert messages[:2] == [
        "replan_with(value) ends the plan: write `return replan_with(value)` at the top "
        "level, not inside an expression or a function"] * 2
    assert messages[2] == 'replan_with takes exactly one value: replan_with({"email": text})'


def test_dates_are_parsed_with_strptime_within_limits() -> None:
    interpreter = TFChainInterpreter({})
    value = interpreter.evaluate(
        'd = datetime.datetime.strptime("7 March 2026", "%d %B %Y")\n'
        'return d.date().isoformat(), datetime.date.fromisoformat("2026-03-08").day').value
    assert value == ("2026-03-07", 8)
    failed = interpreter.check('return datetime.datetime.strptime("x", "%Y")')
    assert failed == []
    for bad, error in (('strptime(1, "%Y")', "strptime() arguments must be str"),
                       ('strptime("1" * 300, "%Y")', "at most 200 characters")):
        with pytest.raises(TFInterpreterError, match=re.escape(error)):
            interpreter.evaluate(f"return datetime.datetime.{bad}")
