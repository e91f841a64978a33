"""Scripted replies and tools for DCBrain tests."""

from __future__ import annotations

import asyncio
from typing import Any

from dcbrain import Chain, FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.neural import Neural


def plan(source: str) -> str:
    """A planner reply holding ``source`` as a tf_plan block."""
    return f"Here is my plan.\n```tf_plan\n{source}\n```"


def verdict(is_solved: bool, suggestion: str = "") -> dict[str, Any]:
    """A validator reply."""
    return {"is_solved": is_solved, "suggestion": suggestion}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def event_types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def hanging_planner() -> tuple[asyncio.Event, FunctionLLM]:
    """A planner that never answers, and the event it sets once it is asked."""
    started = asyncio.Event()

    async def slow_planner(messages: list[dict[str, Any]]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    return started, FunctionLLM(slow_planner)


def brain_with_input_during_its_plan() -> DCBrain:
    """A brain whose plan's first call posts new user input to conversation ``c1``."""
    neural = Neural()

    def user_writes(text: str) -> str:
        """Simulates the user typing while the plan runs."""
        neural.post_user_input("c1", text)
        return "posted"

    summarize = Chain(name="summarize", llm=ScriptedLLM(["never"]), prompt="{{ text }}")
    planner = ScriptedLLM([plan("user_writes(text='stop')\nreturn summarize(text='a')")])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   tools=[user_writes], neural=neural)


def brain_reusing_its_chain(chain_llm: ScriptedLLM) -> DCBrain:
    """Plan 1 calls ``summarize`` (an object chain on ``chain_llm``) and fails after it;
    plan 2 calls it again with the same text (reused) and succeeds with its summary."""
    summarize = Chain(name="summarize", llm=chain_llm, prompt="Summarize: {{ text }}",
                      output_json_schema={"type": "object",
                                          "properties": {"summary": {"type": "string"}},
                                          "required": ["summary"]})
    return DCBrain(
        spec_chains={"summarize": summarize},
        default_llm=ScriptedLLM([plan('s = summarize(text="long")\nk = "nope"\nreturn s[k]'),
                                 plan('s = summarize(text="long")\nreturn s["summary"]')]),
        default_validate_llm=ScriptedLLM([verdict(True)]))
