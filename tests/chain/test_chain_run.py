"""Chain: rendering, text and structured output, repair and retry, clear errors."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from dcbrain import Chain, ChainResult, FunctionLLM, LLMReply, ScriptedLLM, TextMessage
from dcbrain.chain import AdditionalInfoPrompt, KnowledgePrompt, MemoPrompt
from dcbrain.exceptions import TFChainError, TFLLMError, TFPromptVariableError
from dcbrain.llm import cl100k_base_length

SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "words": {"type": "integer"}},
    "required": ["summary", "words"],
}


def summarize_chain(llm: Any, **kwargs: Any) -> Chain:
    options: dict[str, Any] = {
        "name": "summarize",
        "description": "Summarize a text",
        "prompt": "Summarize: {{ text }}",
        "output_json_schema": SUMMARY_SCHEMA,
    }
    options.update(kwargs)
    return Chain(llm=llm, **options)


# text output


async def test_text_chain_renders_the_template_from_call_arguments() -> None:
    llm = ScriptedLLM(["It is short."])
    chain = Chain(
        name="summarize", llm=llm, prompt="Summarize: {{ text }}", system_prompt="Be {{ tone }}."
    )
    message = TextMessage(
        "user question", additional_kwargs={"text": "a long text", "tone": "brief"}
    )
    result = await chain.async_run(message)
    assert result.content == "It is short."
    assert llm.calls == [
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Summarize: a long text"},
        ]
    ]
    assert result.origin is message
    assert result.current_generate is not None
    assert (result.current_generate.role, result.current_generate.content) == (
        "assistant",
        "It is short.",
    )


def test_sync_run_accepts_a_plain_string() -> None:
    llm = ScriptedLLM(["hello back"])
    result = Chain(name="echo", llm=llm).run("hello")
    assert result.content == "hello back"
    assert llm.calls == [[{"role": "user", "content": "hello"}]]
    assert result.origin is not None and result.origin.content == "hello"


async def test_sync_run_inside_a_running_loop_works() -> None:
    result = Chain(name="echo", llm=ScriptedLLM(["pong"])).run("ping")
    assert result.content == "pong"


async def test_usage_is_the_counted_usage_of_the_llm_calls() -> None:
    llm = ScriptedLLM(["four words in reply"])
    result = await Chain(name="echo", llm=llm).async_run("hello")
    assert result.usage.requests == 1
    assert result.usage.completion_tokens == cl100k_base_length("four words in reply")
    assert result.usage.prompt_tokens > 0


async def test_prompts_render_in_order_and_adjacent_system_messages_merge() -> None:
    llm = ScriptedLLM(["ok"])
    chain = Chain(
        name="answer",
        llm=llm,
        system_prompt="You are helpful.",
        prompt=[KnowledgePrompt(), MemoPrompt(), AdditionalInfoPrompt("Now: {{ input }}")],
    )
    await chain.async_run(
        "and tomorrow?",
        conversation=[TextMessage("weather today?"), TextMessage("sunny", role="assistant")],
        knowledge="Forecast: rain tomorrow",
        intermediate_msgs=[{"role": "assistant", "content": "checking the forecast"}],
    )
    [messages] = llm.calls
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert messages[0]["content"].startswith("You are helpful.\n\nKnowledge that may help:")
    assert "- Forecast: rain tomorrow" in messages[0]["content"]
    assert messages[3] == {"role": "user", "content": "Now: and tomorrow?"}
    assert messages[4] == {"role": "assistant", "content": "checking the forecast"}


async def test_missing_template_variable_is_an_error_naming_the_chain_and_variable() -> None:
    llm = ScriptedLLM(["never"])
    chain = Chain(name="translate", llm=llm, prompt="Translate {{ text }} to {{ lang }}")
    with pytest.raises(TFPromptVariableError, match=r"chain 'translate': .*'lang' is undefined"):
        await chain.async_run(TextMessage("x", additional_kwargs={"text": "hola"}))
    assert llm.calls == []


def test_malformed_template_is_an_error_naming_the_chain() -> None:
    with pytest.raises(TFChainError, match=r"chain 'broken': prompt template has a Jinja2 syntax"):
        Chain(name="broken", llm=ScriptedLLM([]), prompt="{{ oops")


async def test_cleared_prompts_render_nothing_and_fail_clearly() -> None:
    chain = Chain(name="empty", llm=ScriptedLLM(["x"]), system_prompt="sys")
    chain.clear_prompts()
    assert chain.prompts == [] and chain.system_prompt is None
    with pytest.raises(TFChainError, match="chain 'empty': its prompts rendered no message"):
        await chain.async_run("hi")


async def test_prompts_can_be_reset_and_extended() -> None:
    llm = ScriptedLLM(["x"])
    chain = Chain(name="c", llm=llm, prompt="old {{ a }}")
    chain.set_prompts("new {{ b }}", system_prompt="system {{ c }}")
    chain.add_prompt(AdditionalInfoPrompt("more", role="assistant"))
    assert chain.input_schema["required"] == ["b", "c"]
    await chain.async_run(TextMessage("", additional_kwargs={"b": "B", "c": "C"}))
    assert llm.calls[0] == [
        {"role": "system", "content": "system C"},
        {"role": "user", "content": "new B"},
        {"role": "assistant", "content": "more"},
    ]


def test_input_schema_is_inferred_from_template_variables() -> None:
    chain = Chain(name="c", llm=ScriptedLLM([]), prompt="{{ b }} {{ a }} {{ current_input }}")
    assert chain.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    default = Chain(name="d", llm=ScriptedLLM([]))
    assert default.input_schema["required"] == ["input"]


def test_explicit_input_schema_and_description_are_advertised() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    chain = summarize_chain(ScriptedLLM([]), input_schema=schema)
    assert chain.describe() == {
        "name": "summarize",
        "description": "Summarize a text",
        "input_schema": schema,
        "output_schema": SUMMARY_SCHEMA,
    }
    assert Chain(name="t", llm=ScriptedLLM([])).output_schema == {"type": "string"}


@pytest.mark.parametrize("which", ["output_json_schema", "input_schema"])
def test_an_invalid_json_schema_is_rejected_at_construction(which: str) -> None:
    bad = {"type": "object", "properties": {"x": {"type": "strnig"}}}
    with pytest.raises(
        TFChainError,
        match=rf"chain 'summarize': {which} is not a valid JSON Schema at properties/x/type",
    ):
        summarize_chain(ScriptedLLM([]), **{which: bad})


CATASTROPHIC_SCHEMA = {"type": "object",
                       "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
HOSTILE_REPLY = {"a": "a" * 64 + "!"}  # Python's backtracking engine: ~2**64 steps


async def test_a_catastrophic_output_pattern_is_matched_in_linear_time() -> None:
    chain = summarize_chain(ScriptedLLM([HOSTILE_REPLY, {"a": "aaaa"}]),
                            output_json_schema=CATASTROPHIC_SCHEMA)
    started = time.monotonic()
    result = await chain.async_run(text="t")
    assert time.monotonic() - started < 5  # hang guard: it took minutes to forever
    assert result.content == {"a": "aaaa"}
    assert "does not match '^(a+)+$'" in result.logs[1]


def test_an_output_pattern_with_a_backreference_is_refused_at_construction() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": r"(a)\1"}}}
    with pytest.raises(TFChainError, match=r"chain 'summarize': output_json_schema is refused "
                       r"at properties/a/pattern: .*RE2"):
        summarize_chain(ScriptedLLM([]), output_json_schema=schema)


async def test_unique_items_on_a_large_output_array_is_checked_in_linear_time() -> None:
    schema = {"type": "object",
              "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    rows = [{"id": index} for index in range(20_000)]
    chain = summarize_chain(ScriptedLLM([{"rows": [*rows, {"id": 0}]}, {"rows": rows}]),
                            output_json_schema=schema)
    started = time.monotonic()
    result = await chain.async_run(text="t")
    assert time.monotonic() - started < 10  # hang guard: pairwise comparison took ~40 s
    assert result.content == {"rows": rows}
    assert "has non-unique elements" in result.logs[1]


def test_a_schema_that_is_not_a_dict_is_rejected() -> None:
    with pytest.raises(TFChainError, match="must be a JSON Schema dict, got list"):
        summarize_chain(ScriptedLLM([]), output_json_schema=[{"type": "string"}])


def test_a_chain_needs_a_name() -> None:
    with pytest.raises(TFChainError, match="non-empty name"):
        Chain(name="", llm=ScriptedLLM([]))


async def test_llm_errors_propagate_unchanged() -> None:
    chain = Chain(name="c", llm=ScriptedLLM([TFLLMError("HTTP 503")]))
    with pytest.raises(TFLLMError, match="HTTP 503"):
        await chain.async_run("x")


# structured output


async def test_structured_output_is_validated_and_returned_as_a_dict() -> None:
    llm = ScriptedLLM([{"summary": "short", "words": 1}])
    result = await summarize_chain(llm).async_run(TextMessage("", additional_kwargs={"text": "t"}))
    assert result.content == {"summary": "short", "words": 1}
    assert llm.requests[0].json_schema == SUMMARY_SCHEMA


@pytest.mark.parametrize(
    "reply",
    [
        '{"summary": "short", "words": 1,}',
        '```json\n{"summary": "short", "words": 1}\n```',
        'Here it is: {"summary": "short", "words": 1',
    ],
)
async def test_malformed_json_is_repaired_once_without_another_call(reply: str) -> None:
    llm = ScriptedLLM([reply])
    result = await summarize_chain(llm).async_run(TextMessage("", additional_kwargs={"text": "t"}))
    assert result.content == {"summary": "short", "words": 1}
    assert len(llm.calls) == 1


async def test_invalid_output_is_retried_once_with_the_validation_error() -> None:
    llm = ScriptedLLM([{"summary": "short", "words": "one"}, {"summary": "short", "words": 1}])
    result = await summarize_chain(llm).async_run(TextMessage("", additional_kwargs={"text": "t"}))
    assert result.content == {"summary": "short", "words": 1}
    retry_messages = llm.calls[1]
    assert retry_messages[-2] == {
        "role": "assistant",
        "content": '{"summary": "short", "words": "one"}',
    }
    assert retry_messages[-1]["role"] == "user"
    assert "words: 'one' is not of type 'integer'" in retry_messages[-1]["content"]
    assert result.intermediate_msgs == retry_messages[-2:]
    assert result.usage.requests == 2


async def test_non_json_output_is_retried_with_an_explanation() -> None:
    llm = ScriptedLLM(["I cannot answer in JSON.", {"summary": "s", "words": 1}])
    result = await summarize_chain(llm).async_run(TextMessage("", additional_kwargs={"text": "t"}))
    assert result.content == {"summary": "s", "words": 1}
    assert "the reply is not JSON: 'I cannot answer in JSON.'" in llm.calls[1][-1]["content"]


async def test_an_llm_that_never_returns_valid_json_is_an_error_naming_the_chain() -> None:
    llm = ScriptedLLM(["no json here", {"summary": "s"}, "unused"])
    with pytest.raises(TFChainError) as caught:
        await summarize_chain(llm).async_run(TextMessage("", additional_kwargs={"text": "t"}))
    message = str(caught.value)
    assert message.startswith(
        "chain 'summarize': the LLM did not return JSON matching output_json_schema"
    )
    assert "'words' is a required property" in message
    assert len(llm.calls) == 2


async def test_a_list_output_schema_is_returned_wrapped_as_result() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    llm = ScriptedLLM([{"result": [1, 2, 3]}, "[4, 5]"])
    chain = Chain(name="numbers", llm=llm, output_json_schema=schema)
    assert chain.output_schema["properties"]["result"] == schema
    assert (await chain.async_run("list")).content == {"result": [1, 2, 3]}
    assert (await chain.async_run("list")).content == {"result": [4, 5]}
    assert llm.requests[0].json_schema == chain.output_schema


async def test_a_scalar_output_schema_is_wrapped_too() -> None:
    chain = Chain(name="count", llm=ScriptedLLM(["42"]), output_json_schema={"type": "integer"})
    assert (await chain.async_run("how many?")).content == {"result": 42}


async def test_the_llms_own_parsed_value_is_used() -> None:
    reply = LLMReply(content="ignored", parsed={"summary": "from parsed", "words": 2})
    result = await summarize_chain(ScriptedLLM([reply])).async_run(
        TextMessage("", additional_kwargs={"text": "t"})
    )
    assert result.content == {"summary": "from parsed", "words": 2}


async def test_structured_chain_works_with_a_function_llm_reading_the_prompt() -> None:
    def summarize(messages: list[dict[str, Any]]) -> str:
        text = messages[-1]["content"].removeprefix("Summarize: ")
        return json.dumps({"summary": text[:5], "words": len(text.split())})

    result = summarize_chain(FunctionLLM(summarize)).run(
        TextMessage("", additional_kwargs={"text": "one two three"})
    )
    assert result.content == {"summary": "one t", "words": 3}
    assert isinstance(result, ChainResult)
