"""ScriptedLLM and FunctionLLM: replies, recorded calls, counted usage, clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import FunctionLLM, LLMReply, ScriptedLLM, ToolCall
from dcbrain.exceptions import TFLLMError, TFScriptExhaustedError
from dcbrain.llm import LLMCallInfo, cl100k_base_length, count_message_tokens
from dcbrain.usage import Usage

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]


async def test_scripted_replies_come_in_order() -> None:
    llm = ScriptedLLM(["first", "second"])
    assert (await llm.achat(MESSAGES)).content == "first"
    assert (await llm.achat(MESSAGES)).content == "second"
    assert llm.remaining == 0


async def test_a_dict_entry_is_a_json_reply() -> None:
    reply = await ScriptedLLM([{"summary": "短文"}]).achat(MESSAGES)
    assert reply.content == '{"summary": "短文"}'
    assert reply.parsed == {"summary": "短文"}


async def test_an_llmreply_entry_is_returned_with_counted_usage_and_the_model_name() -> None:
    reply = await ScriptedLLM([LLMReply(content="ok", finish_reason="length")]).achat(MESSAGES)
    assert reply.finish_reason == "length"
    assert reply.model == "scripted"
    assert reply.usage.completion_tokens == cl100k_base_length("ok")


async def test_an_llmreply_entry_keeps_its_own_usage() -> None:
    given = Usage.of_call("gpt", 100, 20)
    reply = await ScriptedLLM([LLMReply(content="ok", usage=given, model="gpt")]).achat(MESSAGES)
    assert reply.usage == given


async def test_tool_call_entries_become_tool_calls() -> None:
    llm = ScriptedLLM(
        [ToolCall("c1", "search", {"q": "x"}), [ToolCall("c2", "a"), ToolCall("c3", "b")]]
    )
    single = await llm.achat(MESSAGES)
    assert single.tool_calls == [ToolCall("c1", "search", {"q": "x"})]
    assert single.finish_reason == "tool_calls"
    double = await llm.achat(MESSAGES)
    assert [call.name for call in double.tool_calls] == ["a", "b"]


async def test_an_exception_entry_is_raised() -> None:
    llm = ScriptedLLM([TFLLMError("HTTP 500"), "recovered"])
    with pytest.raises(TFLLMError, match="HTTP 500"):
        await llm.achat(MESSAGES)
    assert (await llm.achat(MESSAGES)).content == "recovered"


async def test_exhausted_script_raises_a_clear_error() -> None:
    llm = ScriptedLLM(["only one"])
    await llm.achat(MESSAGES)
    with pytest.raises(
        TFScriptExhaustedError, match=r"no reply for call #2: all 1 scripted replies.*Hi there"
    ):
        await llm.achat(MESSAGES)


async def test_an_unsupported_entry_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="got int"):
        await ScriptedLLM([42]).achat(MESSAGES)  # type: ignore[list-item]


async def test_usage_is_counted_with_cl100k_base() -> None:
    reply = await ScriptedLLM(["The answer is four."]).achat(MESSAGES)
    assert reply.usage.prompt_tokens == count_message_tokens(MESSAGES)
    assert reply.usage.completion_tokens == cl100k_base_length("The answer is four.")
    assert reply.usage.requests == 1
    assert reply.usage.per_model["scripted"].prompt_tokens == reply.usage.prompt_tokens


async def test_calls_record_the_messages_received_as_snapshots() -> None:
    llm = ScriptedLLM(["a"])
    messages = [dict(message) for message in MESSAGES]
    await llm.achat(messages, json_schema={"type": "object"}, max_tokens=9)
    messages[1]["content"] = "changed afterwards"
    assert llm.calls == [MESSAGES]
    assert llm.requests[0].json_schema == {"type": "object"}
    assert llm.requests[0].max_tokens == 9


async def test_function_llm_computes_replies_from_the_messages() -> None:
    llm = FunctionLLM(lambda messages: messages[-1]["content"].upper())
    assert (await llm.achat(MESSAGES)).content == "HI THERE"
    assert llm.calls == [MESSAGES]


async def test_function_llm_passes_call_info_when_asked() -> None:
    seen: list[LLMCallInfo] = []

    def reply(messages: list[dict[str, Any]], info: LLMCallInfo) -> dict[str, Any]:
        seen.append(info)
        return {"call": info.index}

    llm = FunctionLLM(reply)
    await llm.achat(MESSAGES)
    second = await llm.achat(MESSAGES, json_schema={"type": "object"}, temperature=0.5)
    assert second.parsed == {"call": 1}
    assert seen[1].json_schema == {"type": "object"}
    assert seen[1].temperature == 0.5


async def test_function_llm_accepts_async_functions_and_tool_calls() -> None:
    async def reply(messages: list[dict[str, Any]]) -> list[ToolCall]:
        return [ToolCall("c1", "lookup", {"key": "k"})]

    result = await FunctionLLM(reply).achat(MESSAGES)
    assert result.tool_calls == [ToolCall("c1", "lookup", {"key": "k"})]


async def test_function_llm_errors_propagate() -> None:
    def broken(messages: list[dict[str, Any]]) -> str:
        raise ValueError("bad fake")

    with pytest.raises(ValueError, match="bad fake"):
        await FunctionLLM(broken).achat(MESSAGES)


def test_function_llm_mutating_its_argument_does_not_change_the_record() -> None:
    def mutate(messages: list[dict[str, Any]]) -> str:
        messages.clear()
        return "done"

    llm = FunctionLLM(mutate)
    llm.chat(MESSAGES)
    assert llm.calls == [MESSAGES]
