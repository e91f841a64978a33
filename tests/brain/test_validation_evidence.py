"""The validator sees the evidence: the calls the plan made, with their results."""

from __future__ import annotations

from dcbrain import DCBrain, ScriptedLLM
from support.brain_scripts import plan, verdict


def transactions(month: str) -> list[dict[str, object]]:
    """The account's transactions of a month."""
    return [{"to": "ACME", "amount": 900}, {"to": "Bob", "amount": 25}]


def test_the_validate_prompt_holds_the_calls_and_what_to_check() -> None:
    planner = ScriptedLLM([plan('rows = transactions(month="2026-03")\n'
                                'return {"total": 935}')])  # wrong: the rows sum to 925
    validator = ScriptedLLM([verdict(False, "the total of the rows is 925"), verdict(True)])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator,
                    tools=[transactions], max_iterations=1)
    brain.run("What did I spend in March 2026?", conversation_id="c1")
    prompt = validator.calls[0][0]["content"]
    assert ("## The calls the plan made, with their results (what the result rests on)\n"
            '1. line 1: transactions(month="2026-03") -> [{"to": "ACME", "amount": 900}, '
            '{"to": "Bob", "amount": 25}]\n') in prompt
    assert "(recompute sums, counts and differences yourself)" in prompt
    assert '## The plan\'s result\n{"total": 935}' in prompt


def test_failed_and_long_results_are_shown_within_the_budget() -> None:
    def page(n: int) -> str:
        """A long page."""
        return "p" * 5000

    calls = "\n".join(f"x{n} = page(n={n})" for n in range(12))
    planner = ScriptedLLM([plan(calls + "\nreturn 1")])
    validator = ScriptedLLM([verdict(True)])
    DCBrain(default_llm=planner, default_validate_llm=validator, tools=[page]).run(
        "q", conversation_id="c1")
    prompt = validator.calls[0][0]["content"]
    assert "1. line 1: page(n=0) -> " + "p" * 1500 + "… (3500 more characters)" in prompt
    assert "more calls not shown)" in prompt
    assert prompt.count("p" * 1500) <= 6
