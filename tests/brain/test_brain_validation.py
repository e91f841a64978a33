"""The validator's verdict: its schema and how it is read."""

from __future__ import annotations

import jsonschema

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.templates import VERDICT_SCHEMA
from dcbrain.brain.validation import parse_verdict
from support.brain_scripts import plan


def test_a_solved_verdict_without_suggestion_is_accepted() -> None:
    planner = ScriptedLLM([plan("return 42")])
    validator = ScriptedLLM([{"is_solved": True}])
    result = DCBrain(default_llm=planner, default_validate_llm=validator).run("q")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "validated", 42
    )
    assert len(validator.calls) == 1  # no retry: the verdict matched the schema
    event = next(e for e in result.events if e["type"] == "validation")
    assert event["is_solved"] is True and event.get("parse_error") is None


def test_the_verdict_schema_requires_only_is_solved() -> None:
    jsonschema.validate({"is_solved": False}, VERDICT_SCHEMA)
    assert parse_verdict({"is_solved": False}).suggestion == ""


def test_the_validator_is_shown_the_verdict_schema_and_held_to_its_json_types() -> None:
    planner = ScriptedLLM([plan("return 41"), plan("return 42")])
    # a string where the schema says boolean, then (the chain's one retry) a null where it
    # says string: both refused, no coercion of "true"; the next plan's verdict matches
    validator = ScriptedLLM([{"is_solved": "true"}, {"is_solved": True, "suggestion": None},
                             {"is_solved": True, "suggestion": "fine"}])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator)
    result = brain.run("q")
    assert validator.requests[0].json_schema == VERDICT_SCHEMA
    assert (result.status, result.reason, result.final_result) == ("succeeded", "validated", 42)
    assert result.iterations == 2 and result.suggestions[0].startswith(
        "the validator's verdict could not be parsed")
    retry = validator.requests[1].messages[-1]["content"]
    assert "is_solved: Input should be a valid boolean" in retry
    assert "suggestion: Input should be a valid string" in result.suggestions[0]
