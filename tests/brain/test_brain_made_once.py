"""What a brain makes once for all its runs: the plan and validator chains, the planner's
description of the chains and tools; each made again when what it is made of is replaced."""

from __future__ import annotations

from typing import Any

from dcbrain import Chain, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.planning import PlanningContext, capability_texts
from dcbrain.chain import AdditionalInfoPrompt, PlanCallables
from support.brain_scripts import add, plan, verdict


def _brain(plans: int = 2) -> tuple[DCBrain, ScriptedLLM, ScriptedLLM]:
    planner = ScriptedLLM([plan("return add(a=1, b=2)")] * plans)
    validator = ScriptedLLM([verdict(True)] * plans)
    return DCBrain(default_plan_llm=planner, default_validate_llm=validator,
                   tools=[add], isolation="inprocess"), planner, validator


def test_the_validator_chain_serves_every_run_until_its_prompt_is_replaced() -> None:
    brain, _, validator = _brain(3)
    first = brain.validator_chain()
    assert brain.run("q1", "c1").final_result == 3
    assert brain.run("q2", "c2").final_result == 3
    assert brain.validator_chain() is first
    brain.validate_prompt = AdditionalInfoPrompt("JUDGE {{ input }}: {{ plan_result }}")
    assert brain.validator_chain() is not first
    result = brain.run("q3", "c3")
    assert (result.status, result.reason) == ("succeeded", "validated")
    assert [call[-1]["content"] for call in validator.calls] == [
        *(call[-1]["content"] for call in validator.calls[:2]), "JUDGE q3: 3"]
    assert validator.calls[0][-1]["content"].startswith("You are the validator")


def test_the_validator_chain_follows_a_new_validate_llm() -> None:
    brain, _, _ = _brain()
    first = brain.validator_chain()
    other = ScriptedLLM([verdict(False, "no"), verdict(True)])
    brain.default_validate_llm = other
    assert brain.validator_chain() is not first and brain.validator_chain().llm is other


def test_the_plan_chain_is_made_once_and_again_for_new_prompts() -> None:
    brain, planner, _ = _brain(3)
    template = brain.planner
    chain = template.chain()  # type: ignore[attr-defined]
    brain.run("q1", "c1")
    brain.run("q2", "c2")
    assert template.chain() is chain  # type: ignore[attr-defined]
    template.prompts[0] = AdditionalInfoPrompt("PLAN FOR {{ input }}", role="system")  # type: ignore[attr-defined]
    assert template.chain() is not chain  # type: ignore[attr-defined]
    brain.run("q3", "c3")
    assert planner.calls[-1][0] == {"role": "system", "content": "PLAN FOR q3"}
    assert planner.calls[0][0]["content"].startswith("You are the planner")


def _chain_with_topic() -> Chain:
    return Chain(name="summarize", llm=ScriptedLLM([]), description="sums up",
                 prompt="Sum up {{ topic }} in {{ words }} words")


def test_the_described_callables_are_written_once_per_chain_inputs_given() -> None:
    callables = PlanCallables({"summarize": _chain_with_topic()}, tools=[add])
    assert callables.chain_arguments == {"topic", "words"}
    texts: dict[str, tuple[str, str]] = {}
    for name, inputs in (("none", {}), ("topic", {"topic": "x", "other": 1}),
                         ("again", {"other": 2})):
        context = PlanningContext(question="q", max_iterations=1, max_tokens=1)
        context.describe_callables(callables, inputs)
        texts[name] = (context.spec_chains, context.tools)
        # the same texts as written afresh from the callables' descriptions
        assert texts[name] == capability_texts(callables.describe(inputs))
    assert "topic: str = ..." in texts["topic"][0]
    assert "topic: str = ..." not in texts["none"][0] and texts["again"] == texts["none"]
    assert "add(a: int, b: int) -> int" in texts["none"][1]


def test_a_brain_with_new_tools_describes_them() -> None:
    brain, planner, _ = _brain()
    brain.run("q1", "c1")

    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    brain.tools = [*brain.tools, brain.tools[0].__class__(multiply)]
    brain.run("q2", "c2")
    prompts: list[Any] = [call[0]["content"] for call in planner.calls]
    assert "multiply(" not in prompts[0] and "multiply(a: int, b: int) -> int" in prompts[1]
