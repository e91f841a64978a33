"""construct_chain: the factory behind tf_plan's ``__construct_chain`` (seed 000)."""

from __future__ import annotations

import json

import pytest

from dcbrain import Chain, ScriptedLLM, TextMessage, construct_chain
from dcbrain.chain import JSONExamplePrompt
from dcbrain.exceptions import TFChainError

ENTITIES = {
    "type": "object",
    "properties": {"people": {"type": "array", "items": {"type": "string"}}},
    "required": ["people"],
}


async def test_a_constructed_chain_returns_structured_output_guided_by_a_json_example() -> None:
    llm = ScriptedLLM([{"people": ["Ada", "Alan"]}])
    chain = construct_chain(llm, output_schema=ENTITIES, tags=["extract", "people"])
    assert isinstance(chain, Chain)
    result = await chain.async_run(TextMessage("", additional_kwargs={"input": "Ada met Alan."}))
    assert result.content == {"people": ["Ada", "Alan"]}
    [messages] = llm.calls
    assert messages[0]["role"] == "system"
    assert "Reply with only a JSON object" in messages[0]["content"]
    assert '{"people": ["..."]}' in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": "Ada met Alan."}
    assert llm.requests[0].json_schema == ENTITIES


def test_name_description_and_tags_come_from_the_tags() -> None:
    chain = construct_chain(ScriptedLLM([]), tags=["Extract People", "v2"])
    assert chain.name == "extract_people_v2"
    assert chain.description == "A chain constructed at run time for: Extract People, v2."
    assert chain.tags == ["Extract People", "v2"]
    untagged = construct_chain(ScriptedLLM([]))
    assert untagged.name == "constructed_chain"


def test_explicit_name_description_and_prompt() -> None:
    chain = construct_chain(
        ScriptedLLM([]), name="entities", description="Find people", prompt="People in: {{ text }}"
    )
    assert (chain.name, chain.description) == ("entities", "Find people")
    assert chain.input_schema["required"] == ["text"]
    assert chain.output_json_schema is None
    assert not any(isinstance(prompt, JSONExamplePrompt) for prompt in chain.prompts)


async def test_only_the_given_prompts_are_used() -> None:
    llm = ScriptedLLM(["plain text"])
    chain = construct_chain(llm, prompt="Just {{ input }}", system_prompt="Terse.")
    result = await chain.async_run("this")
    assert result.content == "plain text"
    assert llm.calls == [
        [{"role": "system", "content": "Terse."}, {"role": "user", "content": "Just this"}]
    ]


async def test_keyword_arguments_reach_the_chain() -> None:
    chain = construct_chain(ScriptedLLM(["cached"]), result_cache_key="notes", max_tool_rounds=1)
    message = TextMessage("x")
    await chain.async_run(message)
    assert chain.max_tool_rounds == 1
    assert json.loads(message.additional_kwargs["__chains_intermediate_results"]) == {
        "notes": "cached"
    }


def test_an_invalid_output_schema_is_a_clear_error() -> None:
    with pytest.raises(
        TFChainError, match="chain 'bad': output_json_schema is not a valid JSON Schema"
    ):
        construct_chain(ScriptedLLM([]), output_schema={"type": 12}, name="bad")


def test_a_bad_prompt_template_is_a_clear_error() -> None:
    with pytest.raises(
        TFChainError, match="chain 'bad': prompt template has a Jinja2 syntax error"
    ):
        construct_chain(ScriptedLLM([]), prompt="{% for %}", name="bad")


async def test_a_non_object_schema_is_wrapped_and_the_example_shows_the_wrapper() -> None:
    llm = ScriptedLLM([{"result": [3, 1]}])
    chain = construct_chain(llm, output_schema={"type": "array", "items": {"type": "integer"}})
    result = await chain.async_run(TextMessage("", additional_kwargs={"input": "numbers"}))
    assert result.content == {"result": [3, 1]}
    assert '{"result": [0]}' in llm.calls[0][0]["content"]
