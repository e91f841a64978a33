"""``__chains_intermediate_results`` (seed 001): what a chain writes, and where it is visible."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dcbrain import Chain, FunctionLLM, ScriptedLLM, SeqChains, TextMessage
from dcbrain.chain import AdditionalInfoPrompt, ChainsIntermediatePrompt, read_intermediate_results
from dcbrain.exceptions import TFChainError
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS

ANALYSIS_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["summary", "score"],
}


def cache(message: TextMessage) -> dict[str, Any]:
    raw = message.additional_kwargs[CHAINS_INTERMEDIATE_RESULTS]
    assert isinstance(raw, str), "the cache is stored as a JSON string"
    decoded = json.loads(raw)
    assert isinstance(decoded, dict)
    return decoded


# 写入内容: one test per row of seed 001's table


async def test_structured_output_is_merged_as_is_with_the_schemas_field_names() -> None:
    chain = Chain(
        name="analyze",
        llm=ScriptedLLM([{"summary": "up 5%", "score": 7}]),
        output_json_schema=ANALYSIS_SCHEMA,
    )
    message = TextMessage("report")
    await chain.async_run(message)
    assert cache(message) == {"summary": "up 5%", "score": 7}


async def test_text_output_with_result_cache_key_is_stored_under_the_key() -> None:
    chain = Chain(name="search", llm=ScriptedLLM(["three hits"]), result_cache_key="search_result")
    message = TextMessage("query")
    await chain.async_run(message)
    assert cache(message) == {"search_result": "three hits"}


async def test_text_output_without_result_cache_key_is_not_stored() -> None:
    chain = Chain(name="chat", llm=ScriptedLLM(["hello"]))
    message = TextMessage("hi", additional_kwargs={"k": "v"})
    await chain.async_run(message)
    assert CHAINS_INTERMEDIATE_RESULTS not in message.additional_kwargs
    assert message.additional_kwargs == {"k": "v"}


# how it is written


async def test_results_are_appended_to_the_existing_cache_not_replacing_it() -> None:
    message = TextMessage(
        "q", additional_kwargs={CHAINS_INTERMEDIATE_RESULTS: json.dumps({"earlier": 1, "score": 0})}
    )
    chain = Chain(
        name="analyze",
        llm=ScriptedLLM([{"summary": "s", "score": 9}]),
        output_json_schema=ANALYSIS_SCHEMA,
    )
    await chain.async_run(message)
    assert cache(message) == {"earlier": 1, "summary": "s", "score": 9}


async def test_catch_intermediate_chain_result_false_writes_nothing() -> None:
    chain = Chain(
        name="search",
        llm=ScriptedLLM(["hits"]),
        result_cache_key="search_result",
        catch_intermediate_chain_result=False,
    )
    message = TextMessage("query")
    await chain.async_run(message)
    assert CHAINS_INTERMEDIATE_RESULTS not in message.additional_kwargs


async def test_a_failed_chain_writes_nothing() -> None:
    chain = Chain(
        name="analyze",
        llm=ScriptedLLM(["not json", "still not json"]),
        output_json_schema=ANALYSIS_SCHEMA,
    )
    message = TextMessage("q")
    with pytest.raises(TFChainError):
        await chain.async_run(message)
    assert CHAINS_INTERMEDIATE_RESULTS not in message.additional_kwargs


async def test_non_ascii_results_survive_the_json_round_trip() -> None:
    chain = Chain(name="s", llm=ScriptedLLM(["销量增长"]), result_cache_key="摘要")
    message = TextMessage("q")
    await chain.async_run(message)
    assert "销量增长" in message.additional_kwargs[CHAINS_INTERMEDIATE_RESULTS]
    assert read_intermediate_results(message.additional_kwargs) == {"摘要": "销量增长"}


# 生命周期边界: where the cache is visible


def extract_chain(seen: list[list[dict[str, Any]]]) -> Chain:
    """A chain that reads the summary an earlier chain left, via ChainsIntermediatePrompt."""

    def reply(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return "metrics extracted"

    return Chain(
        name="extract",
        llm=FunctionLLM(reply),
        prompt=[
            ChainsIntermediatePrompt("上一步的分析结果：{{ chains_intermediate_result.summary }}"),
            AdditionalInfoPrompt("请基于以上内容，进一步提取关键指标。"),
        ],
        result_cache_key="metrics",
    )


def analyze_chain() -> Chain:
    return Chain(
        name="analyze",
        llm=ScriptedLLM([{"summary": "营收增长", "score": 8}]),
        output_json_schema=ANALYSIS_SCHEMA,
    )


async def test_serial_chains_in_one_plan_accumulate_through_the_two_phase_sync() -> None:
    # The interpreter's protocol: a shallow copy per call plus that call's kwargs, then only
    # the cache key is synced back into the shared additional_info.
    additional_info: dict[str, Any] = {"user": "u1"}
    seen: list[list[dict[str, Any]]] = []
    for chain, kwargs in [(analyze_chain(), {"param1": "xxx"}), (extract_chain(seen), {})]:
        call_kwargs = additional_info.copy()
        call_kwargs.update(kwargs)
        await chain.async_run(TextMessage("task", additional_kwargs=call_kwargs))
        if CHAINS_INTERMEDIATE_RESULTS in call_kwargs:
            additional_info[CHAINS_INTERMEDIATE_RESULTS] = call_kwargs[CHAINS_INTERMEDIATE_RESULTS]
    assert seen[0][0]["content"].startswith("上一步的分析结果：营收增长")
    assert "param1" not in additional_info
    assert json.loads(additional_info[CHAINS_INTERMEDIATE_RESULTS]) == {
        "summary": "营收增长",
        "score": 8,
        "metrics": "metrics extracted",
    }


async def test_seq_chains_share_one_current_input_so_the_cache_passes_automatically() -> None:
    seen: list[list[dict[str, Any]]] = []
    message = TextMessage("task")
    await SeqChains([analyze_chain(), extract_chain(seen)]).async_run(message)
    assert (
        seen[0][0]["content"]
        == "上一步的分析结果：营收增长\n\n请基于以上内容，进一步提取关键指标。"
    )
    assert cache(message) == {"summary": "营收增长", "score": 8, "metrics": "metrics extracted"}


async def test_without_an_earlier_result_the_intermediate_prompt_is_left_out() -> None:
    seen: list[list[dict[str, Any]]] = []
    await extract_chain(seen).async_run(TextMessage("task"))
    assert seen[0] == [{"role": "user", "content": "请基于以上内容，进一步提取关键指标。"}]


async def test_the_cache_stays_visible_across_runs_on_the_same_input() -> None:
    message = TextMessage("task")
    await analyze_chain().async_run(message)  # first plan
    seen: list[list[dict[str, Any]]] = []
    await extract_chain(seen).async_run(message)  # a later plan, same current_input
    assert seen[0][0]["content"].startswith("上一步的分析结果：营收增长")


async def test_results_written_before_a_failure_are_not_rolled_back() -> None:
    failing = Chain(name="broken", llm=ScriptedLLM(["x", "y"]), output_json_schema=ANALYSIS_SCHEMA)
    message = TextMessage("task")
    search = Chain(name="search", llm=ScriptedLLM(["hits"]), result_cache_key="search_result")
    with pytest.raises(TFChainError):
        await SeqChains([search, failing]).async_run(message)
    assert cache(message) == {"search_result": "hits"}


async def test_same_field_names_overwrite_so_names_must_be_unique() -> None:
    first = Chain(name="a", llm=ScriptedLLM(["first"]), result_cache_key="result")
    second = Chain(name="b", llm=ScriptedLLM(["second"]), result_cache_key="result")
    message = TextMessage("task")
    await SeqChains([first, second]).async_run(message)
    assert cache(message) == {"result": "second"}
