"""TFChainInterpreter: plans call chains and tools by name, are checked first, and report usage."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from dcbrain import (
    Chain,
    LLMReply,
    Neural,
    ScriptedLLM,
    TextMessage,
    TFChainInterpreter,
    Usage,
)
from dcbrain.chain import ChainConsoleResult, PlanCall, partial_chain_result
from dcbrain.exceptions import TFTokenBudgetExceeded, TFUserNewInputError
from dcbrain.journal import CallJournal
from dcbrain.llm import ChatLLM, observe_llm_calls
from dcbrain.tfplan import TFCallError, TFCheckError, TFRuntimeError, TFSyntaxError
from support.event_loop import SLOW_TO_COMPILE, ticks_while
from support.known_usage import reply, tokens

SUMMARY = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


def summarize_chain(*replies: LLMReply | str | dict[str, Any]) -> Chain:
    return Chain(
        name="summarize",
        description="Summarize a text",
        llm=ScriptedLLM(list(replies)),
        prompt="Summarize: {{ text }}",
        output_json_schema=SUMMARY,
    )


def shout_chain(*replies: LLMReply | str) -> Chain:
    return Chain(name="shout", description="Say it loudly", llm=ScriptedLLM(list(replies)))


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


async def fetch(url: str) -> str:
    """Fetch a page (offline stand-in)."""
    await asyncio.sleep(0)
    return f"<page {url}>"


def test_a_plan_calls_chains_and_tools_by_name_with_keyword_arguments() -> None:
    interpreter = TFChainInterpreter(
        {"summarize": summarize_chain({"summary": "short"}), "shout": shout_chain("SHORT!")},
        tools=[word_count, fetch],
    )
    result = interpreter.evaluate(
        'page = fetch(url="https://example.org")\n'
        "s = summarize(text=page)\n"
        'loud = shout(input=s["summary"])\n'
        "{'loud': loud, 'words': word_count(text=page)}\n"
    )
    assert result.value == {"loud": "SHORT!", "words": 2}
    assert result.chain_result.content == {"loud": "SHORT!", "words": 2}
    assert [record.name for record in result.trace] == ["fetch", "summarize", "shout",
                                                         "word_count"]
    assert result.trace[1].kwargs == {"text": "<page https://example.org>"}


async def test_aevaluate_runs_the_same_plan_from_async_code() -> None:
    interpreter = TFChainInterpreter(
        {"summarize": summarize_chain({"summary": "short"})}, tools=[fetch]
    )
    result = await interpreter.aevaluate('summarize(text=fetch(url="u"))["summary"]')
    assert result.value == "short"
    assert result.chain_result.content == "short"


def test_the_chains_input_text_is_the_input_argument_else_the_arguments_as_json() -> None:
    llm = ScriptedLLM(["one", "two", "three"])
    echo = Chain(name="echo", llm=llm, prompt="{{ input }}")
    interpreter = TFChainInterpreter({"echo": echo})
    interpreter.evaluate('echo(input="a")\necho(input_text="b")\n', check=False)
    interpreter.evaluate("echo(n=1)", check=False)
    assert [call[-1]["content"] for call in llm.calls] == ["a", "b", '{"n": 1}']


def test_the_plan_is_checked_against_input_schemas_and_signatures_before_it_runs() -> None:
    chain = summarize_chain({"summary": "never"})
    interpreter = TFChainInterpreter({"summarize": chain}, tools=[word_count])
    with pytest.raises(TFCheckError) as caught:
        interpreter.evaluate("summarize()\nword_count(txt='a')\n")
    assert [str(problem) for problem in caught.value.problems] == [
        "1:1: chain 'summarize' is missing required argument 'text'",
        "2:1: tool 'word_count' is missing required argument 'text'",
        "2:12: tool 'word_count' has no argument 'txt' (expected: text)",
    ]
    assert chain.llm.calls == []  # type: ignore[attr-defined]
    assert interpreter.check("summarize(text='x')") == []


def test_a_chain_argument_already_in_additional_info_may_be_left_out() -> None:
    chain = summarize_chain({"summary": "from the shared text"})
    interpreter = TFChainInterpreter({"summarize": chain}, additional_info={"text": "shared"})
    assert interpreter.check("summarize()") == []
    assert interpreter.evaluate("summarize()").value == {"summary": "from the shared text"}
    assert "Summarize: shared" in chain.llm.calls[0][-1]["content"]  # type: ignore[attr-defined]


def test_chains_take_keyword_arguments_only() -> None:
    interpreter = TFChainInterpreter({"summarize": summarize_chain()})
    problems = interpreter.check("summarize('text')")
    assert [p.message for p in problems] == [
        "chain 'summarize' takes keyword arguments only, e.g. summarize(text=...)",
        "chain 'summarize' is missing required argument 'text'",
    ]


def test_describe_callables_gives_what_a_planning_prompt_needs() -> None:
    interpreter = TFChainInterpreter({"summarize": summarize_chain()}, tools=[word_count])
    described = interpreter.describe_callables()
    trust = {"side_effects": True, "trusted_output": False, "trusted_args": [],
             "trusted_fields": [], "returns_doc": "", "example": None}
    assert [{key: item[key] for key in trust} for item in described] == [trust, trust]
    assert [{key: value for key, value in item.items() if key not in trust}
            for item in described] == [
        {
            "name": "summarize",
            "kind": "chain",
            "description": "Summarize a text",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "output_schema": SUMMARY,
        },
        {
            "name": "word_count",
            "kind": "tool",
            "description": "Count the words of a text.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
            "output_schema": {"type": "integer"},
        },
    ]
    assert set(interpreter.specs) == {"summarize", "word_count"}


@pytest.mark.parametrize(
    ("plan", "content"),
    [
        ("print('hello')", "hello\n"),
        ("'text'", "text"),
        ("{'a': 1}", {"a": 1}),
        ("[1, 2]", {"result": [1, 2]}),
        ("x = 1", ""),
    ],
)
def test_the_result_content_is_the_plans_value_or_else_its_output(
    plan: str, content: Any
) -> None:
    result = TFChainInterpreter({}).evaluate(plan)
    assert result.chain_result.content == content


def test_usage_is_merged_from_every_llm_call_of_the_plan() -> None:
    interpreter = TFChainInterpreter(
        {
            "summarize": summarize_chain(reply({"summary": "s"}, 100, 10)),
            "shout": shout_chain(reply("S!", 20, 2), reply("T!", 30, 3)),
        }
    )
    result = interpreter.evaluate(
        "summarize(text='x')\nshout(input='s')\nshout(input='t')\n"
    )
    assert tokens(result.usage) == (150, 15, 3)
    assert tokens(result.chain_result.usage) == (150, 15, 3)


def test_a_failed_plan_keeps_the_usage_and_trace_of_what_ran_before() -> None:
    invalid = reply("not json at all", 40, 4)
    interpreter = TFChainInterpreter(
        {
            "shout": shout_chain(reply("A!", 20, 2)),
            "summarize": summarize_chain(invalid, reply("still not json", 50, 5)),
        }
    )
    with pytest.raises(TFCallError) as caught:
        interpreter.evaluate("shout(input='a')\nsummarize(text='b')\n")
    error = caught.value
    assert (error.line, error.col) == (2, 1)
    assert "summarize() failed" in str(error)
    partial = partial_chain_result(error)
    assert partial is not None
    # the failing chain's two LLM calls are counted although it returned no result
    assert tokens(partial.usage) == (110, 11, 3)
    assert partial.logs[0].startswith("plan call 1 at 1:1: shout(input='a') -> 'A!'")
    assert partial.logs[1].startswith("plan call 2 at 2:1: summarize(text='b') failed: ")


def test_logs_hold_the_call_trace_then_the_sub_chains_logs() -> None:
    interpreter = TFChainInterpreter({"shout": shout_chain("A!")}, tools=[word_count])
    result = interpreter.evaluate("shout(input='a')\nword_count(text='a b')\n")
    logs = result.chain_result.logs
    assert logs[0].startswith("plan call 1 at 1:1: shout(input='a') -> 'A!' (")
    assert logs[1].startswith("plan call 2 at 2:1: word_count(text='a b') -> 2 (")
    assert logs[2] == "chain 'shout': scripted replied"


def test_construct_chain_builds_a_chain_on_the_default_llm_and_registers_it() -> None:
    neural = Neural()
    llm = ScriptedLLM([reply({"city": "Paris"}, 10, 3)])
    interpreter = TFChainInterpreter({}, default_llm=llm, neural=neural)
    result = interpreter.evaluate(
        "extract = __construct_chain(name='extract', output_schema={'type': 'object', "
        "'properties': {'city': {'type': 'string'}}, 'required': ['city']})\n"
        "extract(input='I live in Paris')['city']\n"
    )
    assert result.value == "Paris"
    assert tokens(result.usage) == (10, 3, 1)
    registered = neural.lookup("chain", "extract")
    assert isinstance(registered, Chain)
    assert registered.llm is llm


def test_a_constructed_chains_catastrophic_pattern_is_matched_in_linear_time() -> None:
    llm = ScriptedLLM([reply({"a": "a" * 64 + "!"}, 1, 1), reply({"a": "aa"}, 1, 1)])
    interpreter = TFChainInterpreter({}, default_llm=llm)
    started = time.monotonic()
    result = interpreter.evaluate(
        "c = __construct_chain(name='c', output_schema={'type': 'object', 'properties': "
        "{'a': {'type': 'string', 'pattern': '^(a+)+$'}}})\n"
        "c(input='x')['a']\n"
    )
    assert time.monotonic() - started < 5  # hang guard: it took minutes to forever
    assert result.value == "aa"


def test_a_constructed_chains_invalid_schema_is_an_error_at_its_line() -> None:
    interpreter = TFChainInterpreter({}, default_llm=ScriptedLLM([]))
    with pytest.raises(TFCallError, match=r"chain 'c': output_json_schema is refused at "
                       r"properties/a/pattern: .*RE2") as caught:
        interpreter.evaluate(
            "x = 1\nc = __construct_chain(name='c', output_schema={'type': 'object', "
            "'properties': {'a': {'type': 'string', 'pattern': '(?=a)'}}})\n")
    assert caught.value.line == 2


def test_construct_chain_without_a_default_llm_says_what_is_missing() -> None:
    with pytest.raises(TFCallError, match="__construct_chain needs a default LLM") as caught:
        TFChainInterpreter({}).evaluate("c = __construct_chain(name='x')")
    assert caught.value.line == 1


def test_a_failing_tool_is_a_runtime_error_at_its_line() -> None:
    def explode(reason: str) -> str:
        raise RuntimeError(reason)

    interpreter = TFChainInterpreter({}, tools=[explode])
    with pytest.raises(TFRuntimeError) as caught:
        interpreter.evaluate("x = 1\ny = explode(reason='boom')\n")
    assert caught.value.location == "2:5"
    assert "boom" in str(caught.value)
    assert "    y = explode(reason='boom')\n        ^" in str(caught.value)


def test_new_user_input_stops_the_plan_at_the_next_chain_call() -> None:
    neural = Neural()

    def user_writes(text: str) -> str:
        """Simulates the user typing while the plan runs."""
        neural.post_user_input("c1", text)
        return "posted"

    first, second = shout_chain("A!"), shout_chain("B!")
    interpreter = TFChainInterpreter(
        {"first": first, "second": second},
        tools=[user_writes],
        neural=neural,
        conversation_id="c1",
    )
    with pytest.raises(TFUserNewInputError) as caught:
        interpreter.evaluate("first(input='a')\nuser_writes(text='stop!')\nsecond(input='b')\n")
    assert caught.value.new_input == "stop!"
    assert len(first.llm.calls) == 1  # type: ignore[attr-defined]
    assert second.llm.calls == []  # type: ignore[attr-defined]


async def test_new_user_input_passes_through_aevaluate_too() -> None:
    neural = Neural()
    neural.post_user_input("c1", "hello?")
    interpreter = TFChainInterpreter(
        {"shout": shout_chain("never")}, neural=neural, conversation_id="c1"
    )
    with pytest.raises(TFUserNewInputError):
        await interpreter.aevaluate("shout(input='a')")


class RefusingBudget:
    """An LLM observer that refuses every call, as a brain's token budget does when spent."""

    def before_call(self, llm: ChatLLM, messages: list[dict[str, Any]], budget: int) -> None:
        raise TFTokenBudgetExceeded("budget spent", requested=budget, used=1, limit=1)

    def after_call(self, llm: ChatLLM, messages: list[dict[str, Any]], reply: LLMReply,
                   duration_s: float) -> None:
        raise AssertionError("no call may be made")


def test_the_callers_llm_observer_sees_every_call_and_a_budget_stop_passes_through() -> None:
    interpreter = TFChainInterpreter({"shout": shout_chain("never")})
    with observe_llm_calls(RefusingBudget()), pytest.raises(TFTokenBudgetExceeded):
        interpreter.evaluate("shout(input='a')")


def test_kwargs_of_one_call_do_not_reach_the_additional_info() -> None:
    info: dict[str, Any] = {"user": "ada"}
    interpreter = TFChainInterpreter({"shout": shout_chain("A!")}, additional_info=info)
    interpreter.evaluate("shout(input='a', param1='xxx')")
    assert info == {"user": "ada"}  # a text chain without result_cache_key writes nothing
    message = interpreter.construct_chain_run_input({"param1": "xxx"})
    assert isinstance(message, TextMessage)
    assert message.additional_kwargs == {"user": "ada", "param1": "xxx"}
    assert info == {"user": "ada"}


def test_a_chain_and_a_tool_may_not_share_a_name() -> None:
    def shout(text: str) -> str:
        return text

    with pytest.raises(Exception, match="both a chain and a tool"):
        TFChainInterpreter({"shout": shout_chain()}, tools=[shout])


def test_usage_type_is_the_librarys_usage() -> None:
    result = TFChainInterpreter({}).evaluate("1")
    assert isinstance(result.usage, Usage)
    assert tokens(result.usage) == (0, 0, 0)


async def test_aevaluate_compiles_the_plan_in_a_worker_thread_while_the_loop_serves() -> None:
    interpreter = TFChainInterpreter({"summarize": summarize_chain()})
    ticks, error = await ticks_while(interpreter.aevaluate(SLOW_TO_COMPILE))
    assert isinstance(error, TFSyntaxError)
    assert error.problems[0].message == "'break' outside loop"
    assert ticks > 1  # 0 when the compile blocked the loop


class RecordingObserver:
    def __init__(self) -> None:
        self.started: list[PlanCall] = []
        self.ended: list[PlanCall] = []

    def on_call_start(self, call: PlanCall) -> None:
        self.started.append(call)

    def on_call_end(self, call: PlanCall) -> None:
        self.ended.append(call)


def test_the_observer_hears_each_call_with_its_kind_reuse_and_branch_path() -> None:
    journal = CallJournal()
    observer = RecordingObserver()
    chains = {"shout": shout_chain("A!", "B!")}
    plan = "x = shout(input='a')\nparallel(word_count(text='a b'), word_count(text='c'))\nreturn x"
    first = TFChainInterpreter(chains, tools=[word_count], journal=journal, observer=observer)
    result = first.evaluate(plan)
    assert isinstance(result, ChainConsoleResult) and result.reused_calls == 0
    # the branches start in either order; each call knows its parallel branch path
    assert sorted((c.kind, c.record.name, c.reused, c.path) for c in observer.started) == [
        ("chain", "shout", False, ""), ("tool", "word_count", False, "1.0"),
        ("tool", "word_count", False, "1.1")]
    assert sorted(id(c.record) for c in observer.ended) == sorted(map(id, result.trace))
    observer.started.clear()
    again = TFChainInterpreter(chains, tools=[word_count], journal=journal, attempt=1,
                               observer=observer)
    replayed = again.evaluate(plan)
    assert replayed.value == "A!" and replayed.reused_calls == 3
    assert all(call.reused for call in observer.started)
