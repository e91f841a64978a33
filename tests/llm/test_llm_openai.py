"""OpenAILLM over real HTTP against the fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from dcbrain import OpenAILLM, ToolCall
from dcbrain.exceptions import TFLLMError, TFLLMUnavailable
from dcbrain.llm import cl100k_base_length, count_message_tokens
from dcbrain.retries import is_transient
from support.fake_openai import FakeOpenAIServer

MESSAGES = [{"role": "user", "content": "Summarize the report"}]
SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


def make_llm(server: FakeOpenAIServer, **kwargs: Any) -> OpenAILLM:
    options: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "timeout": 10.0}
    options.update(kwargs)
    return OpenAILLM("fake-model", base_url=server.base_url, **options)


async def test_chat_completion_returns_content_and_the_servers_token_usage(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reply("A short summary.", usage=(123, 45))
    reply = await make_llm(fake_openai).achat(MESSAGES, max_tokens=50, temperature=0.2)
    assert reply.content == "A short summary."
    assert reply.finish_reason == "stop"
    assert reply.model == "fake-model"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (123, 45)
    assert reply.usage.per_model["fake-model"].requests == 1
    sent = fake_openai.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.messages == MESSAGES
    assert sent.json["max_tokens"] == 50
    assert sent.json["temperature"] == 0.2
    assert sent.headers["authorization"] == "Bearer test-key"


async def test_extra_headers_and_body_are_sent(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply("ok")
    llm = make_llm(fake_openai, extra_headers={"X-Team": "brain"}, extra_body={"top_k": 5})
    await llm.achat(MESSAGES)
    assert fake_openai.requests[0].headers["x-team"] == "brain"
    assert fake_openai.requests[0].json["top_k"] == 5


async def test_max_completion_tokens_parameter_can_be_chosen(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply("ok")
    await make_llm(fake_openai, max_tokens_parameter="max_completion_tokens").achat(
        MESSAGES, max_tokens=10
    )
    assert fake_openai.requests[0].json["max_completion_tokens"] == 10
    assert "max_tokens" not in fake_openai.requests[0].json


async def test_missing_usage_is_counted_locally(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply("four words right here", usage=False)
    reply = await make_llm(fake_openai).achat(MESSAGES)
    assert reply.usage.prompt_tokens == count_message_tokens(MESSAGES)
    assert reply.usage.completion_tokens == cl100k_base_length("four words right here")


async def test_json_schema_mode_sends_response_format_and_parses_the_reply(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reply_json({"summary": "short"})
    reply = await make_llm(fake_openai).achat(
        MESSAGES, json_schema={**SCHEMA, "title": "My Summary"}
    )
    assert reply.parsed == {"summary": "short"}
    response_format = fake_openai.requests[0].response_format
    assert response_format is not None
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "My_Summary"
    assert response_format["json_schema"]["schema"]["properties"] == SCHEMA["properties"]
    assert response_format["json_schema"]["strict"] is False


async def test_json_object_mode_puts_the_schema_in_the_system_message(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reply_json({"summary": "short"})
    llm = make_llm(fake_openai, structured_output="json_object")
    messages = [{"role": "system", "content": "You summarize."}, *MESSAGES]
    reply = await llm.achat(messages, json_schema=SCHEMA)
    assert reply.parsed == {"summary": "short"}
    sent = fake_openai.requests[0]
    assert sent.response_format == {"type": "json_object"}
    assert len(sent.messages) == 2
    assert sent.messages[0]["content"].startswith("You summarize.\n\nReply with only a JSON object")
    assert '"summary"' in sent.messages[0]["content"]


async def test_prompt_mode_sends_no_response_format(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply_json({"summary": "short"})
    await make_llm(fake_openai, structured_output="prompt").achat(MESSAGES, json_schema=SCHEMA)
    sent = fake_openai.requests[0]
    assert sent.response_format is None
    assert sent.messages[0]["role"] == "system"
    assert sent.messages[1:] == MESSAGES


async def test_tool_calls_are_decoded(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply_tool_calls(("add", {"a": 1, "b": 2}), ("search", '{"q": "x",}'))
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    reply = await make_llm(fake_openai).achat(MESSAGES, tools=tools)
    assert reply.finish_reason == "tool_calls"
    assert [(call.name, call.arguments) for call in reply.tool_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("search", {"q": "x"}),  # malformed arguments are repaired
    ]
    assert all(isinstance(call, ToolCall) and call.id for call in reply.tool_calls)
    assert fake_openai.requests[0].tools == tools


@pytest.mark.parametrize(("fault", "max_retries"), [
    (lambda llm: llm.fail(429, "slow down", retry_after=0.01), 2),  # a rate limit
    (lambda llm: llm.drop_connection(), 1),  # a dropped connection
], ids=["rate-limit", "dropped-connection"])
async def test_a_rate_limit_or_a_dropped_connection_is_retried_by_the_sdk(
    fake_openai: FakeOpenAIServer, fault: Callable[[FakeOpenAIServer], None], max_retries: int
) -> None:
    fault(fake_openai)
    fake_openai.reply("finally")
    reply = await make_llm(fake_openai, max_retries=max_retries).achat(MESSAGES)
    assert reply.content == "finally"
    assert len(fake_openai.requests) == 2


async def test_retry_after_beyond_the_sdks_limit_is_not_waited_for(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.fail(429, "come back in ten minutes", retry_after=600)
    fake_openai.reply("not reached")
    with pytest.raises(TFLLMError, match=r"HTTP 429.*come back in ten minutes"):
        await make_llm(fake_openai, max_retries=2).achat(MESSAGES)
    assert len(fake_openai.requests) == 1


async def test_server_errors_are_retried_then_reported_with_status_and_body(
    fake_openai: FakeOpenAIServer,
) -> None:
    for _ in range(3):
        fake_openai.fail(500, "database exploded", retry_after=0.01)
    with pytest.raises(TFLLMError) as caught:
        await make_llm(fake_openai, max_retries=2).achat(MESSAGES)
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "database exploded" in message
    assert "fake-model" in message
    assert len(fake_openai.requests) == 3


async def test_client_errors_are_not_retried(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.fail(401, "invalid api key")
    with pytest.raises(TFLLMError, match=r"HTTP 401.*invalid api key") as caught:
        await make_llm(fake_openai, max_retries=3).achat(MESSAGES)
    assert len(fake_openai.requests) == 1
    assert not is_transient(caught.value)  # nothing a new try would change


@pytest.mark.parametrize("status", [429, 503])
async def test_a_provider_unavailable_through_the_sdks_retries_is_a_transient_error(
    fake_openai: FakeOpenAIServer, status: int,
) -> None:
    for _ in range(2):
        fake_openai.fail(status, "try again later", retry_after=0.01)
    with pytest.raises(TFLLMUnavailable, match=rf"HTTP {status}.*try again later") as caught:
        await make_llm(fake_openai, max_retries=1).achat(MESSAGES)
    assert len(fake_openai.requests) == 2 and is_transient(caught.value)


async def test_a_slow_server_times_out(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.slow(30.0)
    with pytest.raises(TFLLMError, match=r"no response within 0.2s \(tried 1 times\)"):
        await make_llm(fake_openai, timeout=0.2).achat(MESSAGES)


async def test_a_dropped_connection_without_retries_is_a_connection_error(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.drop_connection()
    with pytest.raises(TFLLMError, match="connection failed"):
        await make_llm(fake_openai).achat(MESSAGES)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b'{"unexpected": true}', "application/json"),
        (b'{"choices": []}', "application/json"),
        (b"<html>proxy error</html>", "text/html"),
    ],
)
async def test_malformed_bodies_are_reported(
    fake_openai: FakeOpenAIServer, body: bytes, content_type: str
) -> None:
    fake_openai.malformed(body, content_type=content_type)
    with pytest.raises(TFLLMError, match="malformed response"):
        await make_llm(fake_openai).achat(MESSAGES)


async def test_cancellation_propagates_and_aborts_the_request(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.slow(30.0)
    task = asyncio.create_task(make_llm(fake_openai).achat(MESSAGES))
    while not fake_openai.requests:  # wait until the request reached the server
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_sync_chat_works_repeatedly_on_fresh_event_loops(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply("one")
    fake_openai.reply("two")
    llm = make_llm(fake_openai)
    assert llm.chat(MESSAGES).content == "one"
    assert llm.chat(MESSAGES).content == "two"


def test_missing_api_key_is_a_clear_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="no api_key given and OPENAI_API_KEY is not set"):
        OpenAILLM("gpt-4o-mini")


def test_api_key_defaults_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    fake_openai.reply("ok")
    OpenAILLM("fake-model", base_url=fake_openai.base_url, max_retries=0).chat(MESSAGES)
    assert fake_openai.requests[0].headers["authorization"] == "Bearer from-env"


async def test_a_call_without_max_tokens_sends_the_llms_max_output_tokens(
    fake_openai: FakeOpenAIServer,
) -> None:
    """Budgets reserve ``max_output_tokens`` per call, so the server must be held to it."""
    fake_openai.reply("ok")
    fake_openai.reply("ok")
    await make_llm(fake_openai, max_output_tokens=321).achat(MESSAGES)
    await make_llm(fake_openai).achat(MESSAGES)
    assert fake_openai.requests[0].json["max_tokens"] == 321
    assert fake_openai.requests[1].json["max_tokens"] == 4096


async def test_the_default_output_limit_uses_the_chosen_parameter_name(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reply("ok")
    llm = make_llm(fake_openai, max_output_tokens=77, max_tokens_parameter="max_completion_tokens")
    await llm.achat(MESSAGES)
    assert fake_openai.requests[0].json["max_completion_tokens"] == 77
    assert "max_tokens" not in fake_openai.requests[0].json


async def test_warm_up_sends_nothing_and_the_next_call_works(
    fake_openai: FakeOpenAIServer,
) -> None:
    llm = make_llm(fake_openai)
    llm.warm_up()
    assert fake_openai.requests == []
    fake_openai.reply("ready")
    assert (await llm.achat(MESSAGES)).content == "ready"
    assert len(fake_openai.requests) == 1
