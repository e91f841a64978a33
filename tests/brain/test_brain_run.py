"""A run end to end: direct answers, replanning, recoverable errors, verdicts, fallbacks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dcbrain import Chain, FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.exceptions import TFChainError, TFLLMError, TFUserNewInputError
from dcbrain.neural import Neural
from support.brain_scripts import add, event_types, plan, verdict


def test_a_reply_without_a_plan_is_the_direct_answer() -> None:
    llm = ScriptedLLM(["Paris."])
    result = DCBrain(default_llm=llm).run("Capital of France?", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "direct_answer", "Paris."
    )
    assert result.plans == [] and result.iterations == 1
    assert len(llm.calls) == 1  # no validation of a direct answer


def test_a_validated_plan_succeeds_with_its_value() -> None:
    llm = ScriptedLLM([plan("return add(a=2, b=3)"), verdict(True)])
    result = DCBrain(default_llm=llm, tools=[add]).run("2+3?", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == ("succeeded", "validated", 5)
    assert result.last_result == 5
    validate_prompt = llm.calls[1][-1]["content"]
    assert "return add(a=2, b=3)" in validate_prompt and "2+3?" in validate_prompt
    assert "## The plan's result\n5" in validate_prompt


def test_a_plan_that_only_prints_answers_with_its_output() -> None:
    llm = ScriptedLLM([plan("print('forty-two')"), verdict(True)])
    result = DCBrain(default_llm=llm).run("q", conversation_id="c1")
    assert result.final_result == "forty-two"


def test_a_failed_validation_replans_with_the_suggestion() -> None:
    plan_llm = ScriptedLLM([plan("return add(a=1, b=1)"), plan("return add(a=2, b=2)")])
    validate_llm = ScriptedLLM([verdict(False, "add 2 and 2, not 1 and 1"), verdict(True)])
    brain = DCBrain(default_llm=plan_llm, default_validate_llm=validate_llm, tools=[add])
    result = brain.run("what is 2+2?", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == ("succeeded", "validated", 4)
    assert result.plans == ["return add(a=1, b=1)", "return add(a=2, b=2)"]
    assert result.suggestions == ["add 2 and 2, not 1 and 1"]
    second_planning = plan_llm.calls[1][0]["content"]
    assert "## The validator's last suggestion\nadd 2 and 2, not 1 and 1" in second_planning
    assert "return add(a=1, b=1)" in second_planning  # the failed attempt is shown
    assert "Its result: 2" in second_planning


@pytest.mark.parametrize(
    ("bad_plan", "error_text"),
    [
        ("return add(a=1, c=2)", "has no argument 'c'"),  # static check
        ("x = [1][5]\nreturn x", "IndexError"),  # runtime error
        ("import os", "import of 'os' is not allowed"),  # syntax
        ("return explode(text='x')", "boom"),  # a chain error
    ],
)
def test_recoverable_errors_replan_without_validation(bad_plan: str, error_text: str) -> None:
    explode = Chain(name="explode", llm=ScriptedLLM([TFChainError("boom")]), prompt="{{ text }}")
    plan_llm = ScriptedLLM([plan(bad_plan), plan("return add(a=1, b=2)")])
    validate_llm = ScriptedLLM([verdict(True)])
    brain = DCBrain(
        spec_chains={"explode": explode}, default_llm=plan_llm,
        default_validate_llm=validate_llm, tools=[add],
    )
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", 3)
    assert len(validate_llm.calls) == 1  # only the second plan was validated
    assert result.suggestions == []
    second_planning = plan_llm.calls[1][0]["content"]
    assert "It failed with this error:" in second_planning and error_text in second_planning
    finished = [e for e in result.events if e["type"] == "plan_finished"]
    assert [e["ok"] for e in finished] == [False, True]
    assert error_text in finished[0]["error"]


def test_an_llm_interrupt_inside_a_plan_is_recoverable() -> None:
    flaky = Chain(name="flaky", llm=ScriptedLLM([TFLLMError("provider down")]), prompt="{{ q }}")
    plan_llm = ScriptedLLM([plan("return flaky(q='x')"), "gave up: 7"])
    brain = DCBrain(spec_chains={"flaky": flaky}, default_llm=plan_llm)
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "direct_answer", "gave up: 7"
    )
    assert "provider down" in plan_llm.calls[1][0]["content"]


@pytest.mark.parametrize(
    "garbage",
    ["I think it is fine", {"is_solved": "yes", "suggestion": 3}, {"suggestion": "no verdict"}],
)
def test_a_garbage_verdict_is_not_solved_with_the_parse_error(garbage: Any) -> None:
    plan_llm = ScriptedLLM([plan("return 1"), plan("return 2")])
    # the validate chain repairs once and asks once more before giving up
    validate_llm = ScriptedLLM([garbage, garbage, verdict(True)])
    brain = DCBrain(default_llm=plan_llm, default_validate_llm=validate_llm)
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", 2)
    assert len(result.suggestions) == 1
    assert result.suggestions[0].startswith("the validator's verdict could not be parsed")
    first = next(e for e in result.events if e["type"] == "validation")
    assert first["is_solved"] is False and first["parse_error"]


def test_plan_and_validate_llms_fall_back_to_the_default_llm() -> None:
    default = ScriptedLLM([plan("return 1"), verdict(True)])
    brain = DCBrain(default_llm=default)
    assert brain.plan_llm is default and brain.validate_llm is default
    assert brain.run("q", conversation_id="c1").ok
    assert len(default.calls) == 2


def test_dedicated_plan_and_validate_llms_are_used_when_given() -> None:
    default = ScriptedLLM([])
    planner = ScriptedLLM([plan("return 1")])
    validator = ScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=default, default_plan_llm=planner, default_validate_llm=validator)
    assert brain.run("q", conversation_id="c1").ok
    assert (len(planner.calls), len(validator.calls), len(default.calls)) == (1, 1, 0)


def test_only_plan_llm_given_validation_falls_back() -> None:
    default = ScriptedLLM([verdict(True)])
    planner = ScriptedLLM([plan("return 1")])
    assert DCBrain(default_llm=default, default_plan_llm=planner).run("q", "c1").ok
    assert len(default.calls) == 1


def test_construct_chain_in_a_plan_uses_the_default_llm() -> None:
    default = ScriptedLLM([{"city": "Paris"}])
    planner = ScriptedLLM([
        plan("c = __construct_chain(output_schema={'type': 'object', 'properties': "
             "{'city': {'type': 'string'}}, 'required': ['city']}, tags=['geo'])\n"
             "return c(input='capital of France')['city']"),
    ])
    validator = ScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=default, default_plan_llm=planner, default_validate_llm=validator)
    result = brain.run("q", conversation_id="c1")
    assert result.final_result == "Paris"
    assert "capital of France" in default.calls[0][-1]["content"]


def test_capabilities_are_serialized_into_the_input_and_the_planning_prompt() -> None:
    summarize = Chain(
        name="summarize", description="Summarize a text", llm=ScriptedLLM([]),
        prompt="Summarize: {{ text }}",
        output_json_schema={"type": "object", "properties": {"summary": {"type": "string"}},
                            "required": ["summary"]},
    )
    seen: dict[str, Any] = {}

    def planner(messages: list[dict[str, Any]]) -> str:
        seen["system"] = messages[0]
        seen["last"] = messages[-1]
        return "done"

    brain = DCBrain(spec_chains={"summarize": summarize}, default_llm=FunctionLLM(planner),
                    tools=[add])
    brain.run("Summarize the news", conversation_id="c1")
    assert seen["system"]["role"] == "system"
    assert seen["last"] == {"role": "user", "content": "Summarize the news"}
    text = seen["system"]["content"]
    chains_section = text.split("## Chains\n")[1].split("\n\n")[0]
    assert chains_section == ("summarize(text: str) -> summarize_result\n"
                              "  Summarize a text")
    tools_section = text.split("## Tools\n")[1].split("\n## ")[0]
    assert tools_section.startswith("add(a: int, b: int) -> int\n")
    assert tools_section.rstrip().endswith(
        'Records (dicts: read a field as r["field"]):\n'
        "summarize_result:\n  summary: str")
    assert "Planning attempts left, this one included: 10 of 10." in text
    assert "Tokens left: 128000 of 128000." in text
    for construct in ("import", "try", "parallel(", "return value", "keyword arguments"):
        assert construct in text


def test_custom_prompts_replace_the_templates() -> None:
    planner = ScriptedLLM([plan("return 41 + 1")])
    validator = ScriptedLLM([verdict(True)])
    brain = DCBrain(
        default_llm=planner, default_validate_llm=validator,
        planning_prompt="PLAN with {{ iterations_left }} tries",
        validate_prompt="CHECK {{ plan_result }} for {{ input }}",
    )
    assert brain.run("q?", conversation_id="c1").final_result == 42
    assert planner.calls[0][0] == {"role": "system", "content": "PLAN with 10 tries"}
    assert validator.calls[0][0] == {"role": "user", "content": "CHECK 42 for q?"}


def test_user_new_input_from_a_plan_passes_through_untouched() -> None:
    error = TFUserNewInputError("the user said something", new_input="stop")

    def interrupt() -> str:
        """Interrupt."""
        raise error

    llm = ScriptedLLM([plan("return interrupt()")])
    brain = DCBrain(default_llm=llm, tools=[interrupt])
    events: list[str] = []
    brain.subscribe(lambda event: events.append(event.type))
    with pytest.raises(TFUserNewInputError) as caught:
        brain.run("q", conversation_id="c1")
    assert caught.value is error
    assert events[-1] == "error" and "final" not in events
    assert not brain.busy


async def test_user_new_input_posted_on_neural_stops_before_planning() -> None:
    neural = Neural()
    llm = ScriptedLLM([plan("return 1")])
    brain = DCBrain(default_llm=llm, neural=neural)
    neural.post_user_input("c1", "actually, something else")
    with pytest.raises(TFUserNewInputError) as caught:
        await brain.async_run("q", conversation_id="c1")
    assert caught.value.new_input == "actually, something else"
    assert llm.calls == []


def test_connect_to_neural_registers_chains_llm_and_memory() -> None:
    from dcbrain.memory import SQLiteMemory

    neural = Neural()
    chain = Chain(name="summarize", llm=ScriptedLLM([]), prompt="{{ text }}")
    llm = ScriptedLLM([])
    with SQLiteMemory(":memory:") as memory:
        DCBrain(spec_chains={"summarize": chain}, default_llm=llm, memory=memory, neural=neural)
        assert neural.lookup("chain", "summarize") is chain
        assert neural.lookup("llm", "default_llm") is llm
        assert neural.lookup("memory", "memory") is memory


def test_an_unexpected_error_aborts_with_the_trajectory() -> None:
    class Broken(ScriptedLLM):
        async def _achat(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            raise ZeroDivisionError("bug in a provider")

    result = DCBrain(default_llm=Broken([])).run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("aborted", "error")
    assert "ZeroDivisionError: bug in a provider" in (result.error or "")
    assert event_types(result.events)[-1] == "final"


def test_a_planner_provider_failure_fails_with_reason_error() -> None:
    result = DCBrain(default_llm=ScriptedLLM([])).run("q", conversation_id="c1")
    assert (result.status, result.reason) == ("failed", "error")
    assert "TFScriptExhaustedError" in (result.error or "")


def test_the_result_is_json_able() -> None:
    llm = ScriptedLLM([plan("return {'n': add(a=1, b=2)}"), verdict(True)])
    result = DCBrain(default_llm=llm, tools=[add]).run("q", conversation_id="c1")
    record = json.loads(json.dumps(result.to_dict()))
    assert record["final_result"] == {"n": 3} and record["status"] == "succeeded"
    assert record["usage"]["total_tokens"] == result.usage.total_tokens > 0
    assert all("type" in event for event in record["events"])
    assert result.conversation_id == "c1" and len(result.run_id) == 32
