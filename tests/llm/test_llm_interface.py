"""ChatLLM: the shared achat work (observer, JSON decoding) and the sync wrapper."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from dcbrain.chain._usage import UsageCollector
from dcbrain.exceptions import TFLLMError, TFLLMInterrupt, TFUserNewInputError
from dcbrain.llm import (
    ChatLLM,
    FunctionLLM,
    LLMReply,
    ScriptedLLM,
    ToolCall,
    cl100k_base_length,
    count_message_tokens,
    llm_observer,
    observe_llm_calls,
)
from dcbrain.usage import Usage
from support.llms import NoUsageLLM

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


async def test_observer_without_call_failed_sees_no_after_call_for_a_failed_call() -> None:
    observer = RecordingObserver()
    llm = ScriptedLLM([RuntimeError("provider down")])
    with observe_llm_calls(observer), pytest.raises(RuntimeError, match="provider down"):
        await llm.achat(MESSAGES)
    assert len(observer.before) == 1
    assert observer.after == []


class FailureObserver(RecordingObserver):
    def __init__(self) -> None:
        super().__init__()
        self.failed: list[tuple[str, int, BaseException, float]] = []

    def call_failed(
        self, llm: ChatLLM, messages: list[dict[str, Any]], error: BaseException,
        duration_s: float,
    ) -> None:
        self.failed.append((llm.model, len(messages), error, duration_s))


async def test_observer_call_failed_is_told_about_a_failed_call_and_the_error_passes() -> None:
    observer = FailureObserver()
    llm = ScriptedLLM([TFLLMError("HTTP 503"), "ok"])
    with observe_llm_calls(observer), pytest.raises(TFLLMError, match="HTTP 503") as caught:
        await llm.achat(MESSAGES)
    assert [(model, n, error) for model, n, error, _ in observer.failed] == [
        ("scripted", 1, caught.value)
    ]
    assert observer.failed[0][3] >= 0 and observer.after == []
    with observe_llm_calls(observer):
        await llm.achat(MESSAGES)
    assert len(observer.failed) == 1 and len(observer.after) == 1


async def test_observer_call_failed_is_told_about_a_cancelled_call() -> None:
    observer = FailureObserver()
    started = asyncio.Event()

    async def hang(messages: list[dict[str, Any]]) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    with observe_llm_calls(observer):
        task = asyncio.create_task(FunctionLLM(hang).achat(MESSAGES))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [type(error) for _, _, error, _ in observer.failed] == [asyncio.CancelledError]


async def test_a_usage_collector_passes_a_failed_call_on_to_its_parent() -> None:
    inner = FailureObserver()
    with observe_llm_calls(UsageCollector(inner)), pytest.raises(TFLLMError):
        await ScriptedLLM([TFLLMError("down")]).achat(MESSAGES)
    assert len(inner.before) == 1 and len(inner.failed) == 1


async def test_usage_a_provider_did_not_report_is_counted_with_cl100k() -> None:
    observer = RecordingObserver()
    with observe_llm_calls(observer):
        reply = await NoUsageLLM("word " * 2000).achat(MESSAGES)
    expected = (count_message_tokens(MESSAGES), cl100k_base_length("word " * 2000))
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == expected
    assert reply.usage.requests == 1
    assert reply.usage.per_model["no-usage"].completion_tokens == expected[1]
    assert observer.after == [("no-usage", "word " * 2000, sum(expected))]


async def test_counted_usage_includes_tool_calls() -> None:
    call = ToolCall("call_1", "search", {"q": "weather in Paris"})
    reply = await NoUsageLLM("", [call]).achat(MESSAGES)
    assert reply.usage.completion_tokens == cl100k_base_length(
        'search{"q": "weather in Paris"}'
    )


async def test_reported_usage_is_kept() -> None:
    class Reporting(NoUsageLLM):
        async def _achat(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMReply:
            return LLMReply(content="x", usage=Usage.of_call("m", 1, 2))

    reply = await Reporting("x").achat(MESSAGES)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1, 2)


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
