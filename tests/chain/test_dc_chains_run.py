"""DCChains (seed 001): plan, check, run; on failure replan with the errors; ValueError at last."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import Chain, ChainResult, DCChains, ScriptedLLM, TextMessage
from dcbrain.chain import ChainContext
from dcbrain.exceptions import TFOrchestrationError
from support.known_usage import reply, tokens

SUMMARY = {"type": "object", "properties": {"summary": {"type": "string"}},
           "required": ["summary"]}


def block(script: str) -> str:
    return f"Here is the plan:\n```tf_plan\n{script}\n```\n"


class Orchestrator:
    """Returns scripted replies in order and records what it was given."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.seen: list[tuple[str, list[str], list[str]]] = []

    def __call__(self, ctx: ChainContext, dc: DCChains, failed_plans: list[str],
                 failed_infos: list[str]) -> str:
        self.seen.append((ctx.current_input.content, failed_plans, failed_infos))
        return self.replies[len(self.seen) - 1]


def summarize(*replies: Any) -> Chain:
    return Chain(name="summarize", description="Summarize a text", llm=ScriptedLLM(list(replies)),
                 prompt="Summarize: {{ text }}", output_json_schema=SUMMARY)


def test_a_successful_plan_returns_the_accumulated_result() -> None:
    orchestrator = Orchestrator(block("summarize(text='long text')['summary']"))
    dc = DCChains({"summarize": summarize(reply({"summary": "short"}, 30, 3))},
                  orchestrate_chain=orchestrator)
    result = dc.run("summarize my text")
    assert isinstance(result, ChainResult)
    assert result.content == "short"
    assert tokens(result.usage) == (30, 3, 1)
    assert result.origin is not None and result.origin.content == "summarize my text"
    assert orchestrator.seen == [("summarize my text", [], [])]
    assert any(line.startswith("plan call 1 at 1:1: summarize(text='long text')")
               for line in result.logs)


async def test_async_run_accepts_a_text_message() -> None:
    dc = DCChains({"summarize": summarize(reply({"summary": "short"}, 30, 3))},
                  orchestrate_chain=Orchestrator(block("summarize(text='t')")))
    message = TextMessage("task", additional_kwargs={"lang": "en"})
    result = await dc.async_run(message)
    assert result.content == {"summary": "short"}
    assert result.origin is message
    assert tokens(result.usage) == (30, 3, 1)


def test_each_failure_is_handed_to_the_next_round_with_its_reason() -> None:
    orchestrator = Orchestrator(
        "I would summarize it.",                              # no block
        block("x = summarize(text='a'"),                      # syntax
        block("summarize(txt='a')"),                          # check
        block("s = summarize(text='a')\ny = s['summary'][9]"),  # runtime, line 2
        block("summarize(text='a')['summary']"),
    )
    dc = DCChains(
        {"summarize": summarize(reply({"summary": "s1"}, 10, 1), reply({"summary": "s2"}, 10, 1))},
        orchestrate_chain=orchestrator,
        max_plan_times=5,
    )
    result = dc.run("task")
    assert result.content == "s2"
    plans, infos = orchestrator.seen[-1][1], orchestrator.seen[-1][2]
    assert plans == [
        "I would summarize it.",
        "x = summarize(text='a'",
        "summarize(txt='a')",
        "s = summarize(text='a')\ny = s['summary'][9]",
    ]
    assert infos[0].startswith("no tf_plan block")
    assert infos[1].startswith("1:")
    assert "never closed" in infos[1] or "invalid syntax" in infos[1]
    assert infos[2] == "1:1: chain 'summarize' is missing required argument 'text'"
    assert infos[3] == "2:5: IndexError: string index out of range\n    y = s['summary'][9]\n" \
        "        ^"
    # the round that failed at run time spent tokens: they are kept
    assert tokens(result.usage) == (20, 2, 2)


def test_after_the_last_failure_a_value_error_carries_scripts_reasons_and_usage() -> None:
    dc = DCChains(
        {"summarize": summarize(reply({"summary": "s"}, 10, 1), reply({"summary": "s"}, 10, 1))},
        orchestrate_chain=Orchestrator(block("summarize(text='a')\n1 / 0"),
                                       block("summarize(text='b')\nunknown()")),
        max_plan_times=2,
    )
    with pytest.raises(ValueError, match="no plan succeeded in 2 attempts") as caught:
        dc.run("task")
    error = caught.value
    assert isinstance(error, TFOrchestrationError)
    assert error.failed_plans == ["summarize(text='a')\n1 / 0", "summarize(text='b')\nunknown()"]
    assert error.failed_infos[0].startswith("2:1: ZeroDivisionError: division by zero")
    assert error.failed_infos[1].startswith("2:1: unknown function 'unknown'")
    assert tokens(error.usage) == (10, 1, 1)  # the second plan failed its check: never ran
    assert isinstance(error.result, ChainResult)


def test_the_orchestrators_own_llm_tokens_count_including_failed_rounds() -> None:
    planner = ScriptedLLM([reply("no plan here", 100, 10),
                           reply(block("summarize(text='x')"), 200, 20)])

    async def orchestrate(ctx: ChainContext, dc: DCChains, plans: list[str],
                          infos: list[str]) -> str:
        return (await planner.achat([{"role": "user", "content": ctx.current_input.content}])
                ).content

    dc = DCChains({"summarize": summarize(reply({"summary": "s"}, 30, 3))},
                  orchestrate_chain=orchestrate)
    result = dc.run("task")
    assert tokens(result.usage) == (330, 33, 3)


def test_tools_of_the_dc_chains_and_of_the_run_are_callable_from_the_plan() -> None:
    def today() -> str:
        """Today's date."""
        return "2025-01-01"

    def shout(text: str) -> str:
        return text.upper()

    dc = DCChains({"summarize": summarize()}, tools=[today],
                  orchestrate_chain=Orchestrator(block("shout(text=today())")))
    assert dc.run("task", tools=[shout]).content == "2025-01-01"


def test_max_plan_times_must_be_positive() -> None:
    with pytest.raises(Exception, match="max_plan_times"):
        DCChains({"summarize": summarize()}, orchestrate_chain=Orchestrator(), max_plan_times=0)


def test_planner_view_of_a_dc_chains() -> None:
    dc = DCChains({"summarize": summarize()}, name="researcher", description="Research a topic",
                  orchestrate_chain=Orchestrator())
    assert dc.name == "researcher"
    assert DCChains({"summarize": summarize()}).name == "DCChains"
    assert dc.describe()["input_schema"]["required"] == ["input"]
    assert [item["name"] for item in dc.describe_callables()] == ["summarize"]
    assert dc.max_plan_times == 3
    assert dc.chains_map["summarize"].name == "summarize"
