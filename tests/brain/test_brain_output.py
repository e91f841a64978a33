"""A typed run output: the answer validated into the caller's type, misfits replanned."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.events import ErrorEvent
from support.brain_scripts import plan, verdict


class Weather(BaseModel):
    city: str
    celsius: float


def brain(llm: ScriptedLLM, **options: Any) -> DCBrain:
    return DCBrain(default_llm=llm, isolation="inprocess", **options)


def planner_prompts(llm: ScriptedLLM) -> list[str]:
    """The system messages (the rendered planning template) of every planning."""
    return [call[0]["content"] for call in llm.calls if "tf_plan language" in call[0]["content"]]


def test_a_result_that_fits_is_the_typed_output() -> None:
    llm = ScriptedLLM([plan('return {"city": "Lisbon", "celsius": 21.5}'), verdict(True)])
    result = brain(llm, output_type=Weather).run("Weather in Lisbon?", "c1")
    assert result.status == "succeeded" and result.reason == "validated"
    assert result.output == Weather(city="Lisbon", celsius=21.5)
    assert result.final_result == {"city": "Lisbon", "celsius": 21.5}  # the plain value
    (prompt,) = planner_prompts(llm)
    assert "## The answer's shape" in prompt and '"celsius"' in prompt


def test_a_result_that_does_not_fit_is_replanned_with_pydantic_s_error() -> None:
    llm = ScriptedLLM([
        plan('return {"city": "Lisbon", "celsius": "warm"}'), verdict(True),
        plan('return {"city": "Lisbon", "celsius": 21.5}'), verdict(True),
    ])
    result = brain(llm, output_type=Weather).run("Weather in Lisbon?", "c1")
    assert result.status == "succeeded" and result.iterations == 2
    assert result.output == Weather(city="Lisbon", celsius=21.5)
    first, second = planner_prompts(llm)
    assert "does not match" not in first
    error = ("the answer does not match the output type Weather: celsius: Input should be a "
             "valid number, unable to parse string as a number")
    assert f"It failed with this error:\n{error}" in second
    errors = [event for event in result.events if event["type"] == ErrorEvent.type]
    assert [(event["source"], event["error"]) for event in errors] == [("output_type", error)]


def test_a_direct_answer_is_validated_too_and_json_text_is_decoded() -> None:
    llm = ScriptedLLM(["It is warm.", '{"city": "Porto", "celsius": 18}'])
    result = brain(llm).run("Weather in Porto?", "c1", output_type=Weather)
    assert result.reason == "direct_answer" and result.iterations == 2
    assert result.output == Weather(city="Porto", celsius=18)
    assert "Input should be a valid dictionary" in planner_prompts(llm)[1]


def test_a_run_stopped_by_its_budget_has_no_output() -> None:
    llm = ScriptedLLM([plan('return {"city": "Lisbon"}'), verdict(True)])
    result = brain(llm, output_type=Weather, max_iterations=1).run("q", "c1")
    assert (result.status, result.reason, result.output) == ("failed", "max_iterations", None)
    assert "celsius: Field required" in (result.last_error or "")


def test_the_output_type_of_a_run_replaces_the_brain_s() -> None:
    llm = ScriptedLLM([plan("return 42"), verdict(True)])
    result = brain(llm, output_type=Weather).run("q", "c1", output_type=int)
    assert result.output == 42


def test_without_an_output_type_the_output_is_the_final_result() -> None:
    result = brain(ScriptedLLM(["Paris."])).run("Capital of France?", "c1")
    assert result.output == result.final_result == "Paris."


def test_an_output_type_pydantic_cannot_describe_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="DCBrain: output_type must be a type, not the string"):
        brain(ScriptedLLM([]), output_type="Weather")


def test_the_result_carries_the_run_s_messages() -> None:
    llm = ScriptedLLM([plan("return 5"), verdict(True)])
    result = brain(llm).run("2+3?", "c1")
    question, answer = result.messages
    assert (question.role, question.content) == ("user", "2+3?")
    assert (answer.role, answer.content) == ("assistant", "5")
    assert answer.additional_kwargs["run_id"] == result.run_id
    stopped = brain(ScriptedLLM([plan("return 1"), verdict(False, "no")]),
                    max_iterations=1).run("q", "c2")
    assert [m.role for m in stopped.messages] == ["user", "assistant"]
    assert stopped.messages[1].content.startswith("(no answer: max_iterations)")
