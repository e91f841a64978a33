"""The two-phase sync of ``__chains_intermediate_results`` in plans (seed 001).

One test per step of seed 001's "完整时序" and per row of its "生命周期边界" table that
concerns a single interpreter; nested DCChains and replanning are in test_dc_chains_*.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from dcbrain import (
    Chain,
    FunctionLLM,
    LLMReply,
    ParallelChains,
    ScriptedLLM,
    SeqChains,
    TFChainInterpreter,
)
from dcbrain.chain import AdditionalInfoPrompt, ChainsIntermediatePrompt, read_intermediate_results
from dcbrain.chain.prompts import BasePrompt, PromptContext
from dcbrain.journal import CallJournal
from dcbrain.messages import CHAINS_INTERMEDIATE_RESULTS
from dcbrain.tfplan import Limits, SizeLimitExceeded, TFRuntimeError
from support.known_usage import reply, tokens


class ArgumentNames(BasePrompt):
    """Shows the names in the chain's ``additional_kwargs`` (what a call can see)."""

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        names = ",".join(sorted(context.current_input.additional_kwargs))
        return [{"role": "user", "content": f"kwargs: {names}"}]


def field_schema(name: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}


def chain_a(value: str = "A") -> Chain:
    """Writes ``field_a``; takes ``param1``."""
    return Chain(
        name="chain_a",
        llm=ScriptedLLM([reply({"field_a": value}, 10, 1)]),
        prompt="Work on {{ param1 }}",
        output_json_schema=field_schema("field_a"),
    )


def chain_b() -> Chain:
    """Reads ``field_a`` through ChainsIntermediatePrompt and writes ``field_b``."""
    return Chain(
        name="chain_b",
        llm=ScriptedLLM([reply({"field_b": "B"}, 20, 2)]),
        prompt=[
            ChainsIntermediatePrompt("field_a is {{ chains_intermediate_result.field_a }}"),
            ArgumentNames(),
            AdditionalInfoPrompt("Now {{ param2 }}"),
        ],
        output_json_schema=field_schema("field_b"),
    )


def prompt_of(chain: Chain, call: int = 0) -> str:
    messages = chain.llm.calls[call]  # type: ignore[attr-defined]
    return "\n".join(str(message["content"]) for message in messages)


SEQUENCE = "a = chain_a(param1='xxx')\nb = chain_b(param2='yyy')\n"


# 完整时序


def test_init_additional_info_is_the_callers_dict_by_reference() -> None:
    info: dict[str, Any] = {"user": "ada"}
    interpreter = TFChainInterpreter({"chain_a": chain_a()}, additional_info=info)
    assert interpreter.additional_info is info
    interpreter.evaluate("chain_a(param1='x')")
    assert read_intermediate_results(info) == {"field_a": "A"}


def test_a1_each_call_works_on_a_shallow_copy_with_its_own_arguments() -> None:
    info: dict[str, Any] = {"user": "ada"}
    interpreter = TFChainInterpreter({"chain_a": chain_a()}, additional_info=info)
    message = interpreter.construct_chain_run_input({"param1": "xxx"})
    assert message.additional_kwargs == {"user": "ada", "param1": "xxx"}
    assert message.additional_kwargs is not info
    assert info == {"user": "ada"}


def test_a2_a3_chain_a_writes_its_output_into_its_copy() -> None:
    a = chain_a()
    interpreter = TFChainInterpreter({"chain_a": a})
    interpreter.evaluate("chain_a(param1='xxx')")
    assert "Work on xxx" in prompt_of(a)
    assert interpreter.additional_info[CHAINS_INTERMEDIATE_RESULTS] == '{"field_a": "A"}'


def test_a4_only_the_intermediate_results_are_synced_back() -> None:
    info: dict[str, Any] = {"user": "ada"}
    TFChainInterpreter({"chain_a": chain_a()}, additional_info=info).evaluate(
        "chain_a(param1='xxx')"
    )
    assert info == {"user": "ada", CHAINS_INTERMEDIATE_RESULTS: '{"field_a": "A"}'}
    assert "param1" not in info


def test_b1_chain_b_does_not_see_chain_a_arguments_but_sees_its_results() -> None:
    b = chain_b()
    TFChainInterpreter({"chain_a": chain_a(), "chain_b": b}, additional_info={"user": "ada"}
                       ).evaluate(SEQUENCE)
    assert f"kwargs: {CHAINS_INTERMEDIATE_RESULTS},param2,user" in prompt_of(b)
    assert "param1" not in prompt_of(b)


def test_b2_b3_chain_b_reads_field_a_through_chains_intermediate_prompt() -> None:
    b = chain_b()
    TFChainInterpreter({"chain_a": chain_a("from A"), "chain_b": b}).evaluate(SEQUENCE)
    assert "field_a is from A" in prompt_of(b)


def test_b4_b5_the_results_accumulate_and_are_synced_back() -> None:
    info: dict[str, Any] = {}
    result = TFChainInterpreter(
        {"chain_a": chain_a(), "chain_b": chain_b()}, additional_info=info
    ).evaluate(SEQUENCE)
    assert json.loads(info[CHAINS_INTERMEDIATE_RESULTS]) == {"field_a": "A", "field_b": "B"}
    assert tokens(result.usage) == (30, 3, 2)


# 生命周期边界


def test_serial_chains_in_one_plan_accumulate_chain_n_reads_all_earlier() -> None:
    third = Chain(
        name="third",
        llm=ScriptedLLM(["done"]),
        prompt=[ChainsIntermediatePrompt(
            "{{ chains_intermediate_result.field_a }}+{{ chains_intermediate_result.field_b }}"
        )],
        result_cache_key="field_c",
    )
    info: dict[str, Any] = {}
    TFChainInterpreter(
        {"chain_a": chain_a(), "chain_b": chain_b(), "third": third}, additional_info=info
    ).evaluate(SEQUENCE + "third()\n")
    assert "A+B" in prompt_of(third)
    assert read_intermediate_results(info) == {"field_a": "A", "field_b": "B", "field_c": "done"}


def test_seq_chains_children_share_one_input_without_the_interpreter() -> None:
    b = chain_b()
    pipeline = SeqChains([chain_a("inside"), b], name="pipeline")
    info: dict[str, Any] = {}
    TFChainInterpreter({"pipeline": pipeline}, additional_info=info).evaluate(
        "pipeline(param1='p', param2='q')"
    )
    assert "field_a is inside" in prompt_of(b)  # passed inside the container
    assert read_intermediate_results(info) == {"field_a": "inside", "field_b": "B"}


def ordered_llm(
    name: str, value: str, *, waits_for: asyncio.Event | None, then: asyncio.Event | None,
    finished: list[str], usage: tuple[int, int],
) -> FunctionLLM:
    """An LLM that answers only after ``waits_for`` is set, then sets ``then``."""

    async def answer(messages: list[dict[str, Any]]) -> LLMReply:
        if waits_for is not None:
            await asyncio.wait_for(waits_for.wait(), timeout=30)  # a hang guard, not a timing
        finished.append(name)
        if then is not None:
            then.set()
        return reply({"verdict": value, f"field_{name}": value}, *usage)

    return FunctionLLM(answer)


def racing_chains(finished: list[str]) -> tuple[Chain, Chain]:
    """``first`` and ``second`` write ``verdict``; ``first`` finishes after ``second``."""
    second_done = asyncio.Event()
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}},
              "required": ["verdict"]}
    first = Chain(name="first", llm=ordered_llm("first", "from first", waits_for=second_done,
                                                  then=None, finished=finished, usage=(5, 1)),
                  prompt="{{ input }}", output_json_schema=schema)
    second = Chain(name="second", llm=ordered_llm("second", "from second", waits_for=None,
                                                    then=second_done, finished=finished,
                                                    usage=(7, 2)),
                   prompt="{{ input }}", output_json_schema=schema)
    return first, second


def test_parallel_chains_merge_in_declaration_order_whichever_finishes_first() -> None:
    finished: list[str] = []
    first, second = racing_chains(finished)
    info: dict[str, Any] = {}
    result = TFChainInterpreter(
        {"both": ParallelChains([first, second], name="both")}, additional_info=info
    ).evaluate("both(input='judge')")
    assert finished == ["second", "first"]
    assert read_intermediate_results(info) == {
        "verdict": "from second", "field_first": "from first", "field_second": "from second",
    }
    assert tokens(result.usage) == (12, 3, 2)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_over_two_chains_merges_in_argument_order(mode: str) -> None:
    finished: list[str] = []
    first, second = racing_chains(finished)
    info: dict[str, Any] = {"user": "ada"}
    interpreter = TFChainInterpreter({"first": first, "second": second}, additional_info=info)
    plan = "parallel(first(input='one', only_first=1), second(input='two'))"
    if mode == "sync":
        result = interpreter.evaluate(plan)
    else:
        result = asyncio.run(interpreter.aevaluate(plan))
    assert finished == ["second", "first"]
    assert result.value == [{"verdict": "from first", "field_first": "from first"},
                            {"verdict": "from second", "field_second": "from second"}]
    # the later argument wins the shared key although it finished first
    assert read_intermediate_results(info) == {
        "verdict": "from second", "field_first": "from first", "field_second": "from second",
    }
    assert info["user"] == "ada" and "only_first" not in info
    logs = result.chain_result.logs
    assert logs.index("chain 'first': function replied") < logs.index(
        "chain 'second': function replied"
    )
    assert tokens(result.usage) == (12, 3, 2)


def test_parallel_branches_do_not_see_each_others_results_but_later_calls_see_both() -> None:
    reader = Chain(
        name="reader",
        llm=ScriptedLLM(["ok"]),
        prompt=[ChainsIntermediatePrompt("{{ chains_intermediate_result.field_first }} / "
                                         "{{ chains_intermediate_result.field_second }}")],
    )
    finished: list[str] = []
    first, second = racing_chains(finished)
    TFChainInterpreter({"first": first, "second": second, "reader": reader}).evaluate(
        "parallel(first(input='1'), second(input='2'))\nreader()\n"
    )
    assert "from first / from second" in prompt_of(reader)
    assert "field_first" not in prompt_of(second)


def test_later_plans_on_the_same_input_still_see_earlier_results() -> None:
    info: dict[str, Any] = {}
    TFChainInterpreter({"chain_a": chain_a("round 1")}, additional_info=info).evaluate(
        "chain_a(param1='x')"
    )
    b = chain_b()
    TFChainInterpreter({"chain_b": b}, additional_info=info).evaluate("chain_b(param2='y')")
    assert "field_a is round 1" in prompt_of(b)
    assert read_intermediate_results(info) == {"field_a": "round 1", "field_b": "B"}


def test_a_failed_plan_does_not_roll_back_what_was_written_before_the_failure() -> None:
    info: dict[str, Any] = {}
    with pytest.raises(TFRuntimeError) as caught:
        TFChainInterpreter({"chain_a": chain_a("kept")}, additional_info=info).evaluate(
            "chain_a(param1='x')\nraise ValueError('later step failed')\n"
        )
    assert caught.value.line == 2
    assert read_intermediate_results(info) == {"field_a": "kept"}
    b = chain_b()
    TFChainInterpreter({"chain_b": b}, additional_info=info).evaluate("chain_b(param2='y')")
    assert "field_a is kept" in prompt_of(b)


# joining branches, and what the results cost the host


def putter(size: int) -> Chain:
    """``put(n=...)`` writes ``entry_<n>``: ``size`` characters of text."""

    def write(messages: list[dict[str, Any]]) -> LLMReply:
        n = str(messages[-1]["content"]).split()[-1]
        return reply({f"entry_{n}": "abc def " * (size // 8)}, 1, 1)

    return Chain(name="put", llm=FunctionLLM(write), prompt="Put {{ n }}",
                 output_json_schema={"type": "object"})


class SeenEntries(BasePrompt):
    """Shows the names of the intermediate results the call can see."""

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        names = ",".join(sorted(context.chains_intermediate_results()))
        return [{"role": "user", "content": f"seen: {names}"}]


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_joining_many_branches_costs_what_they_added(isolation: Any) -> None:
    # 190 branches of 100 KB each: joining them one by one re-read the growing cache
    # for every branch (half a minute and more); now the join reads it once. The host
    # keeps 38 MB for the run (results and intermediate results): more than the default.
    info: dict[str, Any] = {}
    interpreter = TFChainInterpreter({"put": putter(100_000)}, additional_info=info,
                                     isolation=isolation, limits=Limits(max_host_mb=64))
    calls = ", ".join(f"put(n={i})" for i in range(190))
    started = time.monotonic()
    result = interpreter.evaluate(f"parts = parallel({calls})\nlen(parts)")
    assert time.monotonic() - started < 15, "joining took minutes"
    assert result.value == 190
    assert list(read_intermediate_results(info)) == [f"entry_{i}" for i in range(190)]


def test_a_branch_sees_what_its_own_calls_and_nested_branches_added() -> None:
    look = Chain(name="look", llm=FunctionLLM(lambda messages: "ok"), prompt=[SeenEntries()])
    plan = (
        "def work(i):\n"
        "    put(n=i)\n"
        "    parallel(put(n=i * 10 + 1), put(n=i * 10 + 2))\n"
        "    return look()\n"
        "parallel(work(1), work(2))\n"
        "look()\n"
    )
    info: dict[str, Any] = {}
    TFChainInterpreter({"put": putter(8), "look": look}, additional_info=info).evaluate(plan)
    seen = sorted(prompt_of(look, call) for call in range(3))
    assert seen == ["seen: entry_1,entry_11,entry_12",
                    "seen: entry_1,entry_11,entry_12,entry_2,entry_21,entry_22",
                    "seen: entry_2,entry_21,entry_22"]
    assert list(read_intermediate_results(info)) == [
        "entry_1", "entry_11", "entry_12", "entry_2", "entry_21", "entry_22"]


def test_a_branch_writing_back_the_value_it_started_from_changes_nothing() -> None:
    plan = "put(n=1)\nparallel(other(input='x'), put(n=1))\n"
    other = Chain(name="other", llm=ScriptedLLM([reply({"entry_1": "changed"}, 1, 1)]),
                  output_json_schema={"type": "object"})
    info: dict[str, Any] = {}
    TFChainInterpreter({"put": putter(8), "other": other}, additional_info=info).evaluate(plan)
    assert read_intermediate_results(info) == {"entry_1": "changed"}


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_intermediate_results_are_paid_for_from_the_runs_host_budget(isolation: Any) -> None:
    info: dict[str, Any] = {}
    interpreter = TFChainInterpreter({"put": putter(400_000)}, additional_info=info,
                                     limits=Limits(max_host_mb=2), isolation=isolation)
    calls = ", ".join(f"put(n={i})" for i in range(8))
    with pytest.raises(SizeLimitExceeded) as caught:
        interpreter.evaluate(f"parallel({calls})")
    assert caught.value.limit == "max_host_mb"
    assert len(info.get(CHAINS_INTERMEDIATE_RESULTS, "")) < 2 * 2**20


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_journal_rows_are_paid_for_from_the_run_host_budget(isolation: Any) -> None:
    # 6 results of about 1 MB: kept in the trace they fit 8 MiB; kept in the journal too,
    # twice as much, they do not
    text = "x" * 1_000_000

    def fetch(n: int) -> str:
        """About 1 MB of text."""
        return text

    plan = "for i in range(6):\n    fetch(n=i)\n"
    limits = Limits(max_host_mb=8)
    plain = TFChainInterpreter({}, tools=[fetch], limits=limits, isolation=isolation)
    assert len(plain.evaluate(plan).trace) == 6
    journal = CallJournal()
    journaled = TFChainInterpreter({}, tools=[fetch], limits=limits, isolation=isolation,
                                   journal=journal)
    with pytest.raises(SizeLimitExceeded) as caught:
        journaled.evaluate(plan)
    assert caught.value.limit == "max_host_mb"
    assert 3 <= len(journal) < 6
