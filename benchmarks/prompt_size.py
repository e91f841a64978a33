"""Tokens of the first planning prompt for the four AgentDojo suites' tool sets.

    python benchmarks/prompt_size.py

The tool sets are the ones the tests ship (``tests/support/agentdojo_plans.py``: the
suites' functions as tools with their trust declarations). Per suite it prints the tokens
(``cl100k_base``) of the whole planning prompt and of its tool section, three ways:

- ``json``: the tool section as it was rendered before result shapes (one JSON object
  per tool with its input and output schema), recomputed here as the reference, in
  today's prompt (whose language summary is longer than it was);
- ``plain``: today's rendering of the same tools, which declare no result shape;
- ``shaped``: today's rendering with each tool's result shape taken from the suite
  function's return annotation (what ``Tool(func)`` derives from ``-> list[Email]``).

The ratio columns compare the tool sections with the ``json`` reference.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from pydantic import TypeAdapter  # noqa: E402

from dcbrain import DCBrain, FunctionLLM  # noqa: E402
from dcbrain.llm.tokens import cl100k_base_length  # noqa: E402
from dcbrain.tools import PlanJsonSchema, SchemaTool  # noqa: E402
from dcbrain.values.jsonsafe import dumps  # noqa: E402
from support.agentdojo_plans import SUITES, environment, suites, tools_for  # noqa: E402

QUESTION = "What is on my calendar today?"


def planning_prompt(tools: list[SchemaTool]) -> str:
    """The system message of the first planning of a run with ``tools``."""
    seen: list[str] = []

    def planner(messages: list[dict[str, Any]]) -> str:
        seen.append(str(messages[0]["content"]))
        return "nothing to plan"

    brain = DCBrain(default_llm=FunctionLLM(planner), tools=tools, max_iterations=1)
    brain.run(QUESTION)
    return seen[0]


def tool_section(prompt: str) -> str:
    """The text between ``## Tools`` and the next heading."""
    start = prompt.index("## Tools\n") + len("## Tools\n")
    end = prompt.index("\n## ", start)
    return prompt[start:end]


def json_section(tools: list[SchemaTool]) -> str:
    """The tool section as one JSON object per tool (the rendering before result shapes)."""
    return "\n".join(dumps({"name": tool.name, "kind": "tool",
                            "description": tool.description,
                            "input_schema": tool.parameters_schema,
                            "output_schema": tool.returns_schema}) for tool in tools)


def shaped(suite_name: str, tools: list[SchemaTool]) -> list[SchemaTool]:
    """``tools`` with the result shapes of the suite functions' return annotations."""
    returns = {function.name: function.return_type for function in suites()[suite_name].tools}
    shaped_tools = []
    for tool in tools:
        schema = TypeAdapter(returns[tool.name]).json_schema(
            mode="serialization", schema_generator=PlanJsonSchema)
        shaped_tools.append(SchemaTool(
            tool.func, name=tool.name, description=tool.description,
            parameters_schema=tool.parameters_schema, returns_schema=schema,
            check_values=False, side_effects=tool.side_effects,
            trusted_output=tool.trusted_output, trusted_fields=tool.trusted_fields,
            trusted_args=tool.trusted_args))
    return shaped_tools


def main() -> None:
    print(f"{'suite':10} {'tools':>5} | {'prompt json':>11} {'plain':>6} {'shaped':>6} | "
          f"{'section json':>12} {'plain':>6} {'shaped':>6} | {'plain/json':>10} "
          f"{'shaped/json':>11}")
    for suite_name in SUITES:
        tools = tools_for(suite_name, environment(suite_name))
        plain_prompt = planning_prompt(tools)
        shaped_prompt = planning_prompt(shaped(suite_name, tools))
        plain_section = tool_section(plain_prompt)
        json_prompt = plain_prompt.replace(plain_section, json_section(tools))
        sections = [cl100k_base_length(text) for text in (
            json_section(tools), plain_section, tool_section(shaped_prompt))]
        prompts = [cl100k_base_length(text) for text in (
            json_prompt, plain_prompt, shaped_prompt)]
        print(f"{suite_name:10} {len(tools):5} | {prompts[0]:11} {prompts[1]:6} "
              f"{prompts[2]:6} | {sections[0]:12} {sections[1]:6} {sections[2]:6} | "
              f"{sections[1] / sections[0]:10.2f} {sections[2] / sections[0]:11.2f}")


if __name__ == "__main__":
    main()
