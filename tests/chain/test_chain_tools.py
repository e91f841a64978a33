"""Chains calling tools: tool messages, recorded returns, bounded rounds, clear errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from dcbrain import Chain, OpenAILLM, ScriptedLLM, ToolCall
from dcbrain.exceptions import TFChainError, TFUserNewInputError
from dcbrain.tools import Tool
from support.fake_openai import FakeOpenAIServer


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def lookup(key: str) -> dict[str, Any]:
    """Look a key up."""
    await asyncio.sleep(0)
    return {"key": key, "value": key.upper()}


def calculator(llm: Any, **kwargs: Any) -> Chain:
    return Chain(name="calc", llm=llm, prompt="{{ input }}", tools=[add], **kwargs)


async def test_tool_calls_are_run_and_their_results_sent_back() -> None:
    llm = ScriptedLLM([ToolCall("c1", "add", {"a": 2, "b": 3}), "The sum is 5."])
    result = await calculator(llm).async_run("2+3?")
    assert result.content == "The sum is 5."
    assert result.tool_returns == [
        {"tool": "add", "call_id": "c1", "arguments": {"a": 2, "b": 3}, "result": 5, "error": None}
    ]
    second = llm.calls[1]
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "add",
        "arguments": '{"a": 2, "b": 3}',
    }
    assert second[-1] == {"role": "tool", "tool_call_id": "c1", "content": "5"}
    assert result.intermediate_msgs == second[-2:]
    assert result.usage.requests == 2


async def test_the_tools_are_advertised_in_openai_format() -> None:
    llm = ScriptedLLM(["no tools needed"])
    await calculator(llm).async_run("hi")
    assert llm.requests[0].tools == [Tool(add).to_openai()]


async def test_several_calls_in_one_reply_keep_their_order() -> None:
    llm = ScriptedLLM(
        [[ToolCall("c1", "lookup", {"key": "a"}), ToolCall("c2", "add", {"a": 1, "b": 1})], "done"]
    )
    result = await calculator(llm).async_run("go", tools=[lookup])
    assert [r["tool"] for r in result.tool_returns] == ["lookup", "add"]
    tool_messages = [m for m in llm.calls[1] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert json.loads(tool_messages[0]["content"]) == {"key": "a", "value": "A"}


async def test_wrong_arguments_are_reported_to_the_llm_naming_tool_and_argument() -> None:
    llm = ScriptedLLM(
        [ToolCall("c1", "add", {"a": "two", "b": 3}), ToolCall("c2", "add", {"a": 2, "b": 3}), "5"]
    )
    result = await calculator(llm).async_run("2+3?")
    assert result.content == "5"
    error = result.tool_returns[0]["error"]
    assert error.startswith("tool 'add': argument 'a'")
    assert llm.calls[1][-1] == {"role": "tool", "tool_call_id": "c1", "content": f"Error: {error}"}
    assert result.tool_returns[1]["result"] == 5


async def test_unknown_tools_are_reported_to_the_llm() -> None:
    llm = ScriptedLLM([ToolCall("c1", "multiply", {"a": 2}), "sorry"])
    result = await calculator(llm).async_run("2*3?")
    assert result.tool_returns[0]["error"] == "unknown tool 'multiply' (available: add)"


async def test_tool_rounds_are_bounded_and_the_last_tool_error_is_named() -> None:
    llm = ScriptedLLM([ToolCall(f"c{i}", "add", {"a": "x", "b": 1}) for i in range(3)])
    with pytest.raises(TFChainError) as caught:
        await calculator(llm, max_tool_rounds=2).async_run("loop")
    message = str(caught.value)
    assert message.startswith("chain 'calc': the LLM still called tools after 2 rounds")
    assert "last tool error: tool 'add': argument 'a'" in message
    assert len(llm.calls) == 3


async def test_a_tool_that_raises_is_an_error_naming_chain_and_tool() -> None:
    def explode(reason: str) -> str:
        """Fail."""
        raise RuntimeError(reason)

    llm = ScriptedLLM([ToolCall("c1", "explode", {"reason": "disk full"})])
    chain = Chain(name="ops", llm=llm, tools=[explode])
    with pytest.raises(
        TFChainError, match="chain 'ops': tool 'explode' raised RuntimeError: disk full"
    ):
        await chain.async_run("go")


async def test_dcbrain_errors_from_tools_pass_through() -> None:
    def ask_user() -> str:
        """Interrupted."""
        raise TFUserNewInputError(new_input="new question")

    chain = Chain(name="ops", llm=ScriptedLLM([ToolCall("c1", "ask_user", {})]), tools=[ask_user])
    with pytest.raises(TFUserNewInputError):
        await chain.async_run("go")


async def test_a_tool_returning_non_data_is_reported_to_the_llm() -> None:
    def handle() -> Any:
        """Returns an object."""
        return object()

    llm = ScriptedLLM([ToolCall("c1", "handle", {}), "ok"])
    result = await Chain(name="c", llm=llm, tools=[handle]).async_run("go")
    assert "is not JSON-like data" in result.tool_returns[0]["error"]


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(TFChainError, match="chain 'calc': two tools are named 'add'"):
        Chain(name="calc", llm=ScriptedLLM([]), tools=[add, Tool(add)])


def test_non_callable_tools_are_rejected() -> None:
    with pytest.raises(TFChainError, match="a tool must be callable, got str"):
        Chain(name="calc", llm=ScriptedLLM([]), tools=["add"])  # type: ignore[list-item]


async def test_tools_then_structured_output() -> None:
    schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    llm = ScriptedLLM([ToolCall("c1", "add", {"a": 20, "b": 22}), {"sum": 42}])
    result = await calculator(llm, output_json_schema=schema).async_run("20+22")
    assert result.content == {"sum": 42}
    assert result.tool_returns[0]["result"] == 42


async def test_tool_loop_over_real_http(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply_tool_calls(("add", {"a": 40, "b": 2}))
    fake_openai.reply("It is 42.", usage=(30, 4))
    llm = OpenAILLM("fake-model", base_url=fake_openai.base_url, api_key="k", max_retries=0)
    result = await calculator(llm).async_run("40+2?")
    assert result.content == "It is 42."
    second = fake_openai.requests[1].messages
    assert second[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": second[-2]["tool_calls"][0]["id"],
        "content": "42",
    }
    assert fake_openai.requests[0].tools == [Tool(add).to_openai()]
    assert result.usage.requests == 2
    assert result.usage.prompt_tokens >= 30
