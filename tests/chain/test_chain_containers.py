"""SeqChains and ParallelChains."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dcbrain import Chain, Chains, FunctionLLM, ParallelChains, ScriptedLLM, SeqChains, TextMessage
from dcbrain.chain import read_intermediate_results
from dcbrain.exceptions import TFChainError
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS


def text_chain(name: str, reply: str, **kwargs: Any) -> Chain:
    return Chain(name=name, llm=ScriptedLLM([reply]), **kwargs)


# SeqChains


async def test_seq_chains_run_in_order_and_return_the_last_content() -> None:
    order: list[str] = []

    def llm_for(name: str) -> FunctionLLM:
        return FunctionLLM(lambda messages: order.append(name) or f"{name} done")

    seq = SeqChains([Chain(name=n, llm=llm_for(n)) for n in ("first", "second", "third")])
    result = await seq.async_run("go")
    assert order == ["first", "second", "third"]
    assert result.content == "third done"
    assert result.usage.requests == 3
    assert len(result.logs) == 3
    assert result.origin is not None and result.origin.content == "go"


async def test_seq_chains_pass_the_same_arguments_to_every_child() -> None:
    first, second = ScriptedLLM(["a"]), ScriptedLLM(["b"])
    seq = SeqChains(
        [
            Chain(name="one", llm=first, prompt="{{ topic }}"),
            Chain(name="two", llm=second, prompt="{{ topic }}!"),
        ]
    )
    await seq.async_run(TextMessage("x", additional_kwargs={"topic": "tea"}))
    assert first.calls[0][0]["content"] == "tea"
    assert second.calls[0][0]["content"] == "tea!"


def test_seq_chains_sync_run() -> None:
    assert SeqChains([text_chain("a", "A"), text_chain("b", "B")]).run("go").content == "B"


def test_containers_describe_their_children() -> None:
    seq = SeqChains(
        [
            Chain(name="a", llm=ScriptedLLM([]), prompt="{{ x }}"),
            Chain(
                name="b",
                llm=ScriptedLLM([]),
                prompt="{{ x }} {{ y }}",
                output_json_schema={"type": "object"},
            ),
        ],
        name="pipeline",
        description="Two steps",
    )
    assert seq.describe() == {
        "name": "pipeline",
        "description": "Two steps",
        "input_schema": {
            "type": "object",
            "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
            "required": ["x", "y"],
        },
        "output_schema": {"type": "object"},
    }


def test_a_container_needs_chains() -> None:
    with pytest.raises(TFChainError, match="needs at least one chain"):
        SeqChains([])
    with pytest.raises(TFChainError, match="expected Chain or Chains, got str"):
        SeqChains(["summarize"])  # type: ignore[list-item]


# ParallelChains


async def test_parallel_chains_run_concurrently() -> None:
    both_started = asyncio.Barrier(2)

    async def waits_for_the_other(messages: list[dict[str, Any]]) -> str:
        await both_started.wait()  # deadlocks unless both run at the same time
        return "ok"

    parallel = ParallelChains(
        [Chain(name=n, llm=FunctionLLM(waits_for_the_other)) for n in ("left", "right")]
    )
    result = await asyncio.wait_for(parallel.async_run("go"), timeout=30)
    assert result.content == {"left": "ok", "right": "ok"}
    assert result.usage.requests == 2


async def test_parallel_intermediate_results_merge_in_declaration_order() -> None:
    finished: list[str] = []
    second_done = asyncio.Event()

    async def slow_first(messages: list[dict[str, Any]]) -> dict[str, Any]:
        await second_done.wait()
        finished.append("first")
        return {"shared": "from first", "first_only": 1}

    def mark_second_done(messages: list[dict[str, Any]]) -> str:
        finished.append("second")
        second_done.set()
        return "signalled"

    object_schema = {"type": "object"}
    first = Chain(name="first", llm=FunctionLLM(slow_first), output_json_schema=object_schema)
    second = SeqChains(
        [
            Chain(
                name="second_work",
                llm=ScriptedLLM([{"shared": "from second", "second_only": 2}]),
                output_json_schema=object_schema,
            ),
            Chain(name="signal", llm=FunctionLLM(mark_second_done)),
        ],
        name="second",
    )
    message = TextMessage("go", additional_kwargs={CHAINS_INTERMEDIATE_RESULTS: '{"before": 0}'})
    result = await ParallelChains([first, second]).async_run(message)
    assert finished == ["second", "first"]  # the first declared finished last
    assert read_intermediate_results(message.additional_kwargs) == {
        "before": 0,
        "shared": "from second",  # declaration order decides, not finishing order
        "first_only": 1,
        "second_only": 2,
    }
    assert result.content == {
        "first": {"shared": "from first", "first_only": 1},
        "second": "signalled",
    }


async def test_parallel_children_do_not_see_each_others_writes_during_the_run() -> None:
    seen: list[dict[str, Any]] = []

    def record(messages: list[dict[str, Any]]) -> str:
        seen.append(dict(messages[0]))
        return "r"

    writer = Chain(name="writer", llm=ScriptedLLM(["w"]), result_cache_key="written")
    reader = Chain(
        name="reader",
        llm=FunctionLLM(record),
        prompt="seen: {{ __chains_intermediate_results | default('nothing') }}",
    )
    message = TextMessage("go")
    await ParallelChains([writer, reader]).async_run(message)
    assert seen == [{"role": "user", "content": "seen: nothing"}]
    assert read_intermediate_results(message.additional_kwargs) == {"written": "w"}


async def test_a_child_that_does_not_write_does_not_undo_anothers_change() -> None:
    message = TextMessage("go", additional_kwargs={CHAINS_INTERMEDIATE_RESULTS: '{"k": "old"}'})
    changer = Chain(name="changer", llm=ScriptedLLM(["new"]), result_cache_key="k")
    quiet = Chain(name="quiet", llm=ScriptedLLM(["nothing"]))
    await ParallelChains([changer, quiet]).async_run(message)
    assert read_intermediate_results(message.additional_kwargs) == {"k": "new"}


async def test_other_call_arguments_of_children_are_not_merged_back() -> None:
    message = TextMessage("go", additional_kwargs={"topic": "tea"})
    await ParallelChains([text_chain("a", "A", result_cache_key="a")]).async_run(message)
    assert set(message.additional_kwargs) == {"topic", CHAINS_INTERMEDIATE_RESULTS}


async def test_a_failing_child_cancels_the_others_and_its_error_is_raised() -> None:
    cancelled = asyncio.Event()
    hanging_started = asyncio.Event()

    async def hang(messages: list[dict[str, Any]]) -> str:
        hanging_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async def fail_after_start(messages: list[dict[str, Any]]) -> str:
        await hanging_started.wait()
        return "not json"

    done = Chain(name="done", llm=ScriptedLLM(["fine"]), result_cache_key="done")
    broken = Chain(
        name="broken",
        llm=FunctionLLM(fail_after_start),
        output_json_schema={"type": "object", "required": ["x"]},
    )
    message = TextMessage("go")
    with pytest.raises(TFChainError, match="chain 'broken'"):
        await ParallelChains([Chain(name="hang", llm=FunctionLLM(hang)), done, broken]).async_run(
            message
        )
    assert cancelled.is_set()
    # what finished before the failure is kept (seed 001: no rollback)
    assert read_intermediate_results(message.additional_kwargs) == {"done": "fine"}


async def test_cancelling_parallel_chains_cancels_every_child() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    def hang_as(name: str) -> FunctionLLM:
        async def hang(messages: list[dict[str, Any]]) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(name)
                raise
            return "never"

        return FunctionLLM(hang)

    parallel = ParallelChains([Chain(name=n, llm=hang_as(n)) for n in ("a", "b")])
    task = asyncio.create_task(parallel.async_run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a", "b"]


def test_parallel_chains_need_distinct_names() -> None:
    with pytest.raises(TFChainError, match="'same' appears more than once"):
        ParallelChains([text_chain("same", "1"), text_chain("same", "2")])


def test_parallel_output_schema_maps_child_names() -> None:
    parallel = ParallelChains([text_chain("a", "A"), text_chain("b", "B")])
    assert parallel.output_schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }


def test_containers_nest_and_run_synchronously() -> None:
    nested = SeqChains(
        [
            text_chain("intro", "hi", result_cache_key="intro"),
            ParallelChains([text_chain("x", "X", result_cache_key="x"), text_chain("y", "Y")]),
        ]
    )
    message = TextMessage("go")
    result = nested.run(message)
    assert result.content == {"x": "X", "y": "Y"}
    assert read_intermediate_results(message.additional_kwargs) == {"intro": "hi", "x": "X"}
    assert isinstance(nested, Chains)
