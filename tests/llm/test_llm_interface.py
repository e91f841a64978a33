"""ChatLLM: the shared achat work (observer, JSON decoding) and the sync wrapper."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from dcbrain.exceptions import TFLLMInterrupt, TFUserNewInputError
from dcbrain.llm import (
    ChatLLM,
    FunctionLLM,
    LLMReply,
    ScriptedLLM,
    count_message_tokens,
    llm_observer,
    observe_llm_calls,
)

MESSAGES = [{"role": "user", "content": "What is two plus two?"}]


class RecordingObserver:
    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget
        self.before: list[tuple[str, int, int]] = []
        self.after: list[tuple[str, str, int]] = []

    def before_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], max_output_tokens: int
    ) -> None:
        projected = count_message_tokens(messages) + max_output_tokens
        self.before.append((llm.model, len(messages), max_output_tokens))
        if self.budget is not None and projected > self.budget:
            raise TFLLMInterrupt(f"would use {projected} tokens, budget {self.budget}")

    def after_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], reply: LLMReply, duration_s: float
    ) -> None:
        assert duration_s >= 0
        self.after.append((llm.model, reply.content, reply.usage.total_tokens))


async def test_observer_sees_every_call_with_its_output_budget_and_usage() -> None:
    llm = ScriptedLLM(["four", "4"], max_output_tokens=100)
    observer = RecordingObserver()
    with observe_llm_calls(observer):
        first = await llm.achat(MESSAGES)
        await llm.achat(MESSAGES, max_tokens=7)
    assert observer.before == [("scripted", 1, 100), ("scripted", 1, 7)]
    assert observer.after[0] == ("scripted", "four", first.usage.total_tokens)
    assert llm_observer.get() is None


async def test_observer_that_raises_stops_the_call_before_it_is_made() -> None:
    llm = ScriptedLLM(["never sent"], max_output_tokens=4096)
    with observe_llm_calls(RecordingObserver(budget=1000)), pytest.raises(TFLLMInterrupt):
        await llm.achat(MESSAGES)
    assert llm.calls == []
    assert llm.remaining == 1


async def test_new_user_input_raised_by_the_observer_passes_through() -> None:
    class NewInput(RecordingObserver):
        def before_call(
            self, llm: ChatLLM, messages: list[dict[str, Any]], max_output_tokens: int
        ) -> None:
            raise TFUserNewInputError(new_input="stop, do something else")

    llm = ScriptedLLM(["x"])
    with observe_llm_calls(NewInput()), pytest.raises(TFUserNewInputError) as caught:
        await llm.achat(MESSAGES)
    assert caught.value.new_input == "stop, do something else"


async def test_observer_is_not_notified_after_a_failed_call() -> None:
    observer = RecordingObserver()
    llm = ScriptedLLM([RuntimeError("provider down")])
    with observe_llm_calls(observer), pytest.raises(RuntimeError, match="provider down"):
        await llm.achat(MESSAGES)
    assert len(observer.before) == 1
    assert observer.after == []


async def test_json_content_is_decoded_when_structured_output_was_requested() -> None:
    llm = FunctionLLM(lambda messages: '{"answer": 4}')
    reply = await llm.achat(MESSAGES, json_schema={"type": "object"})
    assert reply.parsed == {"answer": 4}
    plain = await llm.achat(MESSAGES)
    assert plain.parsed is None


async def test_invalid_json_content_leaves_parsed_empty() -> None:
    llm = FunctionLLM(lambda messages: "four")
    reply = await llm.achat(MESSAGES, json_schema={"type": "object"})
    assert reply.parsed is None
    assert reply.content == "four"


def test_chat_works_without_an_event_loop() -> None:
    reply = ScriptedLLM(["4"]).chat(MESSAGES)
    assert reply.content == "4"


def test_chat_works_in_a_thread_without_an_event_loop() -> None:
    llm = ScriptedLLM(["4"])
    replies: list[str] = []
    thread = threading.Thread(target=lambda: replies.append(llm.chat(MESSAGES).content))
    thread.start()
    thread.join()
    assert replies == ["4"]


async def test_chat_inside_a_running_loop_runs_in_a_worker_thread_with_the_callers_context() -> (
    None
):
    observer = RecordingObserver()
    caller = threading.get_ident()
    seen: list[int] = []

    def answer(messages: list[dict[str, Any]]) -> str:
        seen.append(threading.get_ident())
        return "4"

    with observe_llm_calls(observer):
        reply = FunctionLLM(answer).chat(MESSAGES, max_tokens=5)
    assert reply.content == "4"
    assert seen and seen[0] != caller
    assert observer.before == [("function", 1, 5)]


async def test_cancelling_achat_cancels_the_provider_call() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def hang(messages: list[dict[str, Any]]) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    task = asyncio.create_task(FunctionLLM(hang).achat(MESSAGES))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


def test_reply_to_message_carries_tool_calls_in_openai_format() -> None:
    from dcbrain.llm import ToolCall

    reply = LLMReply(content="", tool_calls=[ToolCall("c1", "add", {"a": 1, "b": 2})])
    assert reply.to_message() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            }
        ],
    }
