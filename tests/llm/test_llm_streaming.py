"""Streamed replies: OpenAILLM against the scripted server over real HTTP, the scripted
streaming LLM, the embedded model, and the scripted server as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from dcbrain import OpenAILLM
from dcbrain.exceptions import TFLLMUnavailable
from dcbrain.llm import StreamingScriptedLLM, count_message_tokens, stream_llm_replies
from dcbrain.llm.fake_server import ScriptedOpenAIServer, ScriptedReply, load_script
from dcbrain.llm.testing import token_pieces
from dcbrain.retries import is_transient
from support.fake_openai import FakeOpenAIServer

MESSAGES = [{"role": "user", "content": "Write the plan"}]
PLAN = "```tf_plan\nrate = exchange_rate(source='EUR', target='USD')\nreturn rate * 3\n```"


def make_llm(server: ScriptedOpenAIServer, **kwargs: Any) -> OpenAILLM:
    options: dict[str, Any] = {"api_key": "test-key", "max_retries": 0, "timeout": 10.0}
    options.update(kwargs)
    return OpenAILLM("scripted-model", base_url=server.base_url, **options)


async def test_a_streamed_reply_arrives_token_by_token_with_the_servers_usage() -> None:
    with ScriptedOpenAIServer([{"content": PLAN, "usage": [123, 45]}]) as server:
        chunks: list[str] = []
        reply = await make_llm(server).achat(MESSAGES, on_delta=chunks.append)
    assert "".join(chunks) == reply.content == PLAN
    assert chunks == token_pieces(PLAN) and len(chunks) > 10
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (123, 45)
    assert reply.finish_reason == "stop"
    (sent,) = server.requests
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_a_stream_without_usage_is_counted_as_dcbrain_counts() -> None:
    with ScriptedOpenAIServer([{"content": PLAN, "usage": False}]) as server:
        reply = await make_llm(server).achat(MESSAGES, on_delta=lambda text: None)
    assert reply.usage.prompt_tokens == count_message_tokens(MESSAGES)
    assert reply.usage.completion_tokens == len(token_pieces(PLAN))
    assert reply.usage.requests == 1


async def test_a_stream_cut_midway_is_a_transient_error_and_is_not_asked_again() -> None:
    with ScriptedOpenAIServer([{"content": PLAN, "cut_after": 5}, "never asked"]) as server:
        chunks: list[str] = []
        with pytest.raises(TFLLMUnavailable, match="stream broke after") as caught:
            await make_llm(server, max_retries=2).achat(MESSAGES, on_delta=chunks.append)
        assert server.remaining == 1  # no second request: text had already arrived
    assert is_transient(caught.value)
    assert "".join(chunks) == "".join(token_pieces(PLAN)[:5])


async def test_a_stream_cut_before_its_first_text_is_asked_for_again() -> None:
    with ScriptedOpenAIServer([{"content": PLAN, "cut_after": 0}, PLAN]) as server:
        chunks: list[str] = []
        reply = await make_llm(server, max_retries=1).achat(MESSAGES, on_delta=chunks.append)
    assert reply.content == "".join(chunks) == PLAN
    assert len(server.requests) == 2


async def test_a_server_error_before_the_stream_is_retried_by_the_client() -> None:
    replies = [{"status": 503, "error": "overloaded"}, PLAN]
    with ScriptedOpenAIServer(replies) as server:
        reply = await make_llm(server, max_retries=1).achat(MESSAGES, on_delta=lambda t: None)
    assert reply.content == PLAN
    assert len(server.requests) == 2


async def test_streamed_tool_calls_are_put_together() -> None:
    call = {"name": "search", "arguments": {"query": "lisbon hotels"}}
    with ScriptedOpenAIServer([{"tool_calls": [call]}]) as server:
        reply = await make_llm(server).achat(MESSAGES, on_delta=lambda t: None)
    assert reply.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("search", {"query": "lisbon hotels"})]


async def test_stream_false_asks_for_one_completion() -> None:
    with ScriptedOpenAIServer([PLAN]) as server:
        chunks: list[str] = []
        reply = await make_llm(server, stream=False).achat(MESSAGES, on_delta=chunks.append)
    assert reply.content == PLAN
    assert chunks == []
    assert "stream" not in server.requests[0]


async def test_without_a_listener_nothing_streams() -> None:
    with ScriptedOpenAIServer([PLAN]) as server:
        reply = await make_llm(server).achat(MESSAGES)
    assert reply.content == PLAN
    assert "stream" not in server.requests[0]


async def test_stream_llm_replies_gives_each_call_its_own_callback() -> None:
    replies: list[list[str]] = []

    def open_reply() -> Any:
        replies.append([])
        return replies[-1].append

    llm = StreamingScriptedLLM(["first reply", "second reply"])
    with stream_llm_replies(open_reply):
        await llm.achat(MESSAGES)
        await llm.achat(MESSAGES)
    assert ["".join(chunks) for chunks in replies] == ["first reply", "second reply"]
    assert all(len(chunks) > 1 for chunks in replies)


async def test_the_scripted_streaming_llm_streams_only_when_listened_to() -> None:
    llm = StreamingScriptedLLM([PLAN, PLAN])
    chunks: list[str] = []
    streamed = await llm.achat(MESSAGES, on_delta=chunks.append)
    plain = await llm.achat(MESSAGES)
    assert streamed.content == plain.content == "".join(chunks) == PLAN
    assert streamed.usage == plain.usage
    with pytest.raises(ValueError, match="tokens_per_second"):
        StreamingScriptedLLM([], tokens_per_second=0)


def test_token_pieces_keep_characters_split_across_tokens_whole() -> None:
    text = "naïve 🌍 façade 東京"
    pieces = token_pieces(text)
    assert "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)


def test_a_script_entry_that_is_not_one_is_named() -> None:
    with pytest.raises(ValueError, match=r"\[1\]: unknown key\(s\) contnet"):
        ScriptedOpenAIServer(["ok", {"contnet": "typo"}])
    with pytest.raises(ValueError, match=r"\[0\]\.usage"):
        ScriptedReply.parse({"usage": [1]}, "[0]")
    with pytest.raises(ValueError, match=r"\[0\]\.cut_after: wrong type str"):
        ScriptedReply.parse({"cut_after": "3"}, "[0]")


def test_the_scripted_server_runs_as_a_process_from_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["hello from the script", {"content": "second"}]))
    assert [r.content for r in load_script(script)] == ["hello from the script", "second"]
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.llm.fake_server", "--script", str(script),
         "--tokens-per-second", "500"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        base_url = line.split()[-1]
        body = {"model": "m", "messages": MESSAGES, "stream": True,
                "stream_options": {"include_usage": True}}
        with httpx.stream("POST", base_url + "/chat/completions", json=body,
                          timeout=10) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "data: [DONE]"
        chunks = [json.loads(line[6:]) for line in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or ""
                       for c in chunks if c["choices"])
        assert text == "hello from the script"
        assert chunks[-1]["usage"]["completion_tokens"] == len(token_pieces(text))
        second = httpx.post(base_url + "/chat/completions", json={"messages": MESSAGES},
                            timeout=10).json()
        assert second["choices"][0]["message"]["content"] == "second"
        exhausted = httpx.post(base_url + "/chat/completions", json={"messages": MESSAGES},
                               timeout=10)
        assert exhausted.status_code == 400
        assert "no scripted reply" in exhausted.json()["error"]["message"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_bad_script_file_is_a_usage_error(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"status": "500"}]))
    done = subprocess.run([sys.executable, "-m", "dcbrain.llm.fake_server", "--script",
                           str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"{script}[0].status: wrong type str" in done.stderr


def test_the_embedded_model_streams_what_it_decodes() -> None:
    from dcbrain.llm.local import LocalLLM, local_model_available

    if not local_model_available():
        pytest.skip("the embedded model is not installed")
    llm = LocalLLM(max_output_tokens=16)
    chunks: list[str] = []
    streamed = llm.chat(MESSAGES, on_delta=chunks.append)
    plain = llm.chat(MESSAGES)
    assert len(chunks) > 1
    assert "".join(chunks) == streamed.content == plain.content
    assert streamed.usage.completion_tokens == plain.usage.completion_tokens > 0


async def test_a_server_that_ignores_stream_answers_with_one_completion(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.reply(PLAN, usage=(30, 12))
    chunks: list[str] = []
    llm = OpenAILLM("fake-model", base_url=fake_openai.base_url, api_key="k", max_retries=0)
    reply = await llm.achat(MESSAGES, on_delta=chunks.append)
    assert fake_openai.requests[0].json["stream"] is True
    assert chunks == [PLAN] and reply.content == PLAN
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (30, 12)


async def test_a_malformed_completion_instead_of_a_stream_is_a_clear_error(
    fake_openai: FakeOpenAIServer,
) -> None:
    from dcbrain.exceptions import TFLLMError

    fake_openai.malformed(b"{not json")
    llm = OpenAILLM("fake-model", base_url=fake_openai.base_url, api_key="k", max_retries=0)
    with pytest.raises(TFLLMError, match="malformed response"):
        await llm.achat(MESSAGES, on_delta=lambda text: None)


def test_the_scripted_server_refuses_bodies_that_are_not_requests() -> None:
    with ScriptedOpenAIServer(["still here"]) as server:
        url = server.base_url + "/chat/completions"
        nested = httpx.post(url, content=b"[" * 100_000 + b"]" * 100_000, timeout=10)
        assert nested.status_code == 400
        assert httpx.post(url, content=b"{not json", timeout=10).status_code == 400
        assert httpx.post(server.base_url + "/nowhere", json={}, timeout=10).status_code == 404
        ok = httpx.post(url, json={"messages": MESSAGES}, timeout=10).json()
    assert ok["choices"][0]["message"]["content"] == "still here"


def test_llm_stream_in_the_config_file_turns_streaming_off(tmp_path: Path) -> None:
    from dcbrain.config import ConfigError, load_config
    from dcbrain.config.composition import build_llms

    path = tmp_path / "dcbrain.toml"
    path.write_text('[llm.streams]\nmodel = "m"\napi_key = "k"\n'
                    '[llm.whole]\nmodel = "m"\napi_key = "k"\nstream = false\n'
                    '[roles]\ndefault = "streams"\n')
    llms = build_llms(load_config(path, environ={}))
    assert (llms["streams"].stream, llms["whole"].stream) == (True, False)
    path.write_text('[llm.main]\nmodel = "m"\napi_key = "k"\nstream = "no"\n')
    with pytest.raises(ConfigError, match=r"llm\.main\.stream"):
        load_config(path, environ={})
