"""MCP tools in a plan and in a plan-execute agent, with a typed chain and $ref steps.

Run it as it is (no model, no network): ``python examples/mcp_tools.py``. It starts the
MCP server ``examples/mcp/weather_server.py`` over stdio; ScriptedLLMs stand in for the
models.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel

from dcbrain import Chain, ScriptedLLM, TFChainInterpreter
from dcbrain.agent import PlanExecuteAgent, Step
from dcbrain.mcp import MCPTools
from dcbrain.tfplan import TFCheckError

SERVER = Path(__file__).with_name("mcp") / "weather_server.py"


class Advice(BaseModel):
    city: str
    take_umbrella: bool


advise = Chain(
    name="advise",
    description="Advise on what to take, from a forecast",
    llm=ScriptedLLM([{"city": "Paris", "take_umbrella": True}]),
    prompt="Forecast: {{ forecast }}. Should I take an umbrella?",
    output_type=Advice,
)

with MCPTools(command=[sys.executable, str(SERVER)], name="weather") as weather:
    print("MCP tools:", ", ".join(f"{tool.name}{tool.signature}" for tool in weather))

    # 1. A plan calls the MCP tools like any tool; the checker knows their arguments.
    interpreter = TFChainInterpreter({"advise": advise}, tools=weather)
    try:
        interpreter.evaluate("return forecast(town='Paris')")
    except TFCheckError as exc:
        for problem in exc.problems:
            print("checked before running:", problem)
    plan = "cities = list_cities()\nreturn [forecast(city=c)['celsius'] for c in cities]"
    print("plan result:", interpreter.evaluate(plan).value)

    # 2. An agent's steps pass results on with $ref; the typed chain is one of its tools.
    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        if history:
            return []
        return [
            Step(1, "forecast", {"city": "Paris"}, "tomorrow's forecast"),
            Step(2, "advise", {"forecast": {"$ref": "step-1.result"}}, "advice"),
        ]

    session = PlanExecuteAgent(planner, [*weather, advise]).run("umbrella in Paris?")
    print("agent:", session.status, session.reason)
    for step in session.history:
        print(f"  {step.describe()} -> {step.error or step.result}")
