"""DCChains: the default orchestrator's prompt, nesting, and intermediate results across rounds."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import Chain, DCChains, ScriptedLLM, TextMessage
from dcbrain.chain import (
    TFPLAN_LANGUAGE_SUMMARY,
    ChainContext,
    ChainsIntermediatePrompt,
    read_intermediate_results,
)
from dcbrain.exceptions import TFChainError
from support.known_usage import reply, tokens


def block(script: str) -> str:
    return f"```tf_plan\n{script}\n```"


def field_schema(name: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


def writer(name: str, field: str, value: str, usage: tuple[int, int] = (10, 1),
           reads: str | None = None) -> Chain:
    """A chain writing ``field``; with ``reads`` it also shows that cached field."""
    prompt: list[Any] = [ChainsIntermediatePrompt(
        f"{reads} = {{{{ chains_intermediate_result.{reads} }}}}"
    )] if reads else []
    return Chain(name=name, description=f"Writes {field}", llm=ScriptedLLM([reply(
        {field: value}, *usage)]), prompt=[*prompt, ChainsIntermediatePrompt("{{ input }}")],
        output_json_schema=field_schema(field))


def prompt_of(chain: Chain) -> str:
    return "\n".join(m["content"] for m in chain.llm.calls[0])  # type: ignore[attr-defined]


def test_the_default_orchestrator_prompt_lists_chains_schemas_and_the_language() -> None:
    planner = ScriptedLLM([reply(block("analyze(input='q')"), 50, 5)])
    analyze = writer("analyze", "summary", "ok")
    dc = DCChains({"analyze": analyze}, llm=planner, abilities_purpose="You plan research.")
    result = dc.run("What changed in Q3?")
    assert result.content == {"summary": "ok"}
    system, user = planner.calls[0]
    assert system["role"] == "system"
    assert system["content"].startswith("You plan research.")
    assert TFPLAN_LANGUAGE_SUMMARY in system["content"]
    assert "- analyze (chain): Writes summary" in system["content"]
    assert '"required": ["summary"]' in system["content"]  # output schema
    assert user["content"] == "Task:\nWhat changed in Q3?"
    assert tokens(result.usage) == (60, 6, 2)


def test_the_default_orchestrator_shows_failed_plans_and_their_errors() -> None:
    planner = ScriptedLLM([
        reply(block("analyze(input=question)"), 50, 5),
        reply(block("analyze(input='q')"), 70, 7),
    ])
    dc = DCChains({"analyze": writer("analyze", "summary", "ok")}, llm=planner)
    result = dc.run("task")
    retry = planner.calls[1][1]["content"]
    assert ("Failed attempt 1:\n```tf_plan\nanalyze(input=question)\n```\n"
            "Error:\n1:15: name 'question' is never assigned") in retry
    assert "Write a new plan that avoids these errors." in retry
    assert tokens(result.usage) == (130, 13, 3)


def test_without_llm_or_orchestrator_the_error_says_what_to_pass() -> None:
    with pytest.raises(TFChainError, match="has no llm to write plans"):
        DCChains({"analyze": writer("analyze", "summary", "ok")}).run("task")


def test_constructed_chains_use_the_dc_chains_llm() -> None:
    llm = ScriptedLLM([
        reply(block("c = __construct_chain(name='city')\nc(input='where?')"), 40, 4),
        reply("Paris", 8, 1),
    ])
    dc = DCChains({"analyze": writer("analyze", "summary", "ok")}, llm=llm)
    result = dc.run("task")
    assert result.content == "Paris"
    assert tokens(result.usage) == (48, 5, 2)


def test_nested_dc_chains_share_intermediate_results_across_levels() -> None:
    first = writer("first", "field_a", "A", usage=(10, 1))
    deep = writer("deep", "field_b", "B", usage=(20, 2), reads="field_a")
    last = writer("last", "field_c", "C", usage=(30, 3), reads="field_b")
    inner = DCChains({"deep": deep}, name="inner",
                     orchestrate_chain=lambda ctx, dc, p, i: block("deep(input='go deeper')"))
    outer = DCChains(
        {"first": first, "inner": inner, "last": last},
        orchestrate_chain=lambda ctx, dc, p, i: block(
            "first(input='start')\ninner(input='dig')\nlast(input='finish')"
        ),
    )
    message = TextMessage("task", additional_kwargs={"user": "ada"})
    result = outer.run(message)
    assert "field_a = A" in prompt_of(deep)      # the inner level reads the outer's result
    assert "field_b = B" in prompt_of(last)      # the outer level reads the inner's result
    assert read_intermediate_results(message.additional_kwargs) == {
        "field_a": "A", "field_b": "B", "field_c": "C",
    }
    assert message.additional_kwargs["user"] == "ada"
    assert tokens(result.usage) == (60, 6, 3)


def test_a_later_run_on_the_same_input_sees_the_earlier_results() -> None:
    message = TextMessage("task")
    DCChains({"first": writer("first", "field_a", "from run 1")},
             orchestrate_chain=lambda ctx, dc, p, i: block("first(input='x')")).run(message)
    second = writer("second", "field_b", "B", reads="field_a")
    DCChains({"second": second},
             orchestrate_chain=lambda ctx, dc, p, i: block("second(input='y')")).run(message)
    assert "field_a = from run 1" in prompt_of(second)
    assert read_intermediate_results(message.additional_kwargs) == {
        "field_a": "from run 1", "field_b": "B",
    }


def test_replanning_after_a_failed_script_keeps_what_it_wrote() -> None:
    first = writer("first", "field_a", "kept", usage=(10, 1))
    second = writer("second", "field_b", "B", usage=(20, 2), reads="field_a")

    def orchestrate(ctx: ChainContext, dc: DCChains, plans: list[str], infos: list[str]) -> str:
        if not plans:
            return block("first(input='x')\nraise RuntimeError('step 2 went wrong')")
        return block("second(input='y')")  # reuses what the failed plan wrote

    message = TextMessage("task")
    result = DCChains({"first": first, "second": second},
                      orchestrate_chain=orchestrate).run(message)
    assert "field_a = kept" in prompt_of(second)
    assert result.content == {"field_b": "B"}
    assert tokens(result.usage) == (30, 3, 2)
    assert read_intermediate_results(message.additional_kwargs) == {
        "field_a": "kept", "field_b": "B",
    }
