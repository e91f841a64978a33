"""``dcbrain demo``: the whole loop offline, with scripted LLMs, in a few seconds.

A travel question: the first plan computes a hotel total in euros, the validator
rejects it (the question asks for dollars), the planner revises the plan (the diff is
shown) to convert the currency and summarize with a chain, and the validator accepts.
Only the LLMs are scripted; the plans really run in the sandbox and call real tools.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from dcbrain.cli._output import print_json
from dcbrain.cli.ask import exit_code, show_result

QUESTION = "How much do 3 nights in a Lisbon hotel cost, in US dollars?"

FIRST_PLAN = '''\
nightly = hotel_price(city="Lisbon")
total = nightly * 3
return {"city": "Lisbon", "nights": 3, "total": total}'''

REVISED_PLAN = '''\
nightly = hotel_price(city="Lisbon")
total_eur = nightly * 3
total_usd = convert_currency(amount=total_eur, source="EUR", target="USD")
note = summarize(text=f"3 nights in Lisbon cost {total_usd} USD ({total_eur} EUR)")
return {"city": "Lisbon", "nights": 3, "total_usd": total_usd, "summary": note["summary"]}'''

SUGGESTION = ("The total is in euros (hotel_price returns EUR) but the question asks for US "
              "dollars: convert it with convert_currency and state the currency.")

HOTEL_PRICES_EUR = {"lisbon": 118.0, "porto": 94.0, "madrid": 131.0}
EUR_RATES = {"USD": 1.08, "GBP": 0.85, "EUR": 1.0}


def hotel_price(city: str) -> float:
    """The average price of one hotel night in a city, in euros (EUR)."""
    return HOTEL_PRICES_EUR.get(city.strip().lower(), 100.0)


def convert_currency(amount: float, source: str, target: str) -> float:
    """Convert an amount of money from one currency to another (EUR, USD, GBP)."""
    in_eur = amount / EUR_RATES[source.upper()]
    return round(in_eur * EUR_RATES[target.upper()], 2)


def _summary_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    text = str(messages[-1].get("content", ""))
    facts = text.split("Summarize:", 1)[-1].strip()
    return {"summary": f"In short: {facts}."}


def build_demo_brain() -> Any:
    """A DCBrain whose LLMs are scripted; tools and a chain are real."""
    from dcbrain.brain import DCBrain
    from dcbrain.chain import Chain
    from dcbrain.llm import FunctionLLM, ScriptedLLM

    planner = ScriptedLLM(
        [
            f"I will look up the nightly price and multiply.\n```tf_plan\n{FIRST_PLAN}\n```",
            f"Convert the total to dollars, then summarize.\n```tf_plan\n{REVISED_PLAN}\n```",
        ],
        model="scripted-planner",
    )
    validator = ScriptedLLM(
        [{"is_solved": False, "suggestion": SUGGESTION}, {"is_solved": True, "suggestion": ""}],
        model="scripted-validator",
    )
    summarize = Chain(
        name="summarize",
        description="Summarize a text in one sentence",
        llm=FunctionLLM(_summary_reply, model="scripted-summarizer"),
        prompt="Summarize: {{ text }}",
        output_json_schema={"type": "object", "properties": {"summary": {"type": "string"}},
                            "required": ["summary"]},
    )
    return DCBrain(
        spec_chains={"summarize": summarize},
        default_llm=validator,
        default_plan_llm=planner,
        default_validate_llm=validator,
        tools=[hotel_price, convert_currency],
        max_iterations=3,
        max_tokens=20_000,
        timeout=60,
    )


def demo(
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the result and every event as JSON.")
    ] = False,
) -> None:
    """Run an offline showcase: a plan fails validation, is revised (diff shown), succeeds."""
    import asyncio

    from rich.console import Console

    from dcbrain.cli.progress import ProgressView

    brain = build_demo_brain()
    if json_output:
        result = asyncio.run(brain.async_run(QUESTION, "demo"))
        print_json(result.to_dict())
        raise typer.Exit(exit_code(result.status, result.reason))
    console = Console(highlight=False)
    console.print("[bold]dcbrain demo[/bold] — scripted LLMs, real tools and sandbox, no "
                  "network\n")
    view = ProgressView(console, show_llm_calls=False)
    with view:
        result = asyncio.run(brain.async_run(QUESTION, "demo", on_event=view.handle))
    judge = result.validated_by
    show_result(console, result, list(result.usage.per_model), judge)
    sys.stdout.flush()
    raise typer.Exit(exit_code(result.status, result.reason))


__all__ = ["QUESTION", "build_demo_brain", "demo"]
