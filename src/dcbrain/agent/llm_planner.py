"""A planner backed by a chat LLM that answers with the step list as structured JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dcbrain.agent.dispatcher import tool_registry
from dcbrain.agent.step import GATHER, Step, validate_plan
from dcbrain.exceptions import TFPlanError
from dcbrain.tools import Tool, ToolLike
from dcbrain.values.jsonsafe import dumps

if TYPE_CHECKING:
    from dcbrain.llm import ChatLLM, LLMReply

PLAN_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "tool_name": {"type": "string"},
                    "args": {
                        "type": "object",
                        "description": 'keyword arguments of the call; a value may be '
                        '{"$ref": "step-<id>.result.<key or index>..."} to pass (part of) '
                        "an earlier step's result",
                    },
                    "expected_outcome": {"type": "string"},
                },
                "required": ["id", "tool_name", "args", "expected_outcome"],
            },
        }
    },
    "required": ["steps"],
}
"""The structured output asked of the LLM: ``{"steps": [{id, tool_name, args, ...}]}``."""

DEFAULT_INSTRUCTIONS = f"""\
You are the planner of a plan-execute agent. Given a goal, the available tools, the \
steps executed so far and the last error, return the plan of the steps still to run, \
as JSON: {{"steps": [{{"id": 1, "tool_name": "...", "args": {{...}}, \
"expected_outcome": "..."}}]}}.
Rules:
- Use only the listed tools, with arguments that match their schemas.
- To pass an earlier step's result as an argument, write the value as \
{{"$ref": "step-<id>.result"}}; for a part of it add dict keys and list indices: \
{{"$ref": "step-2.result.items[0].url"}}. Refer only to steps that run before.
- Give steps increasing integer ids. When revising a plan, keep the id of a step you \
keep and use new ids for new steps.
- expected_outcome is one short sentence: what the step should produce.
- Steps that already succeeded need not be repeated; if you repeat one with the same \
tool and arguments, its earlier result is reused without running it again.
- To run independent calls concurrently, use one step with tool_name "{GATHER}" and \
args {{"calls": [{{"tool_name": "...", "args": {{...}}}}, ...]}}.
- If the last error shows the goal cannot be reached, return {{"steps": []}}.
Return only the JSON object."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class LLMPlanner:
    """``planner(goal, history, last_error)`` computed by a :class:`~dcbrain.llm.ChatLLM`.

    The LLM sees the goal, every tool (name, description, argument schema), the history
    (results cut to ``max_result_chars``) and the last error, and answers with JSON
    matching :data:`PLAN_JSON_SCHEMA`. A reply that is not such a plan raises
    :class:`~dcbrain.exceptions.TFPlanError`, which the agent treats as a replannable
    failure. Inside a :class:`~dcbrain.agent.PlanExecuteAgent` the tools default to the
    agent's own.
    """

    def __init__(
        self,
        llm: ChatLLM,
        *,
        tools: Mapping[str, ToolLike] | Sequence[ToolLike] | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        max_result_chars: int = 2000,
    ) -> None:
        self.llm = llm
        self.tools: dict[str, Tool] | None = None if tools is None else tool_registry(tools)
        self.instructions = instructions
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.max_result_chars = max_result_chars

    def bind_tools(self, tools: Mapping[str, Tool]) -> LLMPlanner:
        """This planner planning over ``tools``, unless it was given tools of its own."""
        if self.tools is not None:
            return self
        bound = LLMPlanner(
            self.llm,
            tools=dict(tools),
            instructions=self.instructions,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            max_result_chars=self.max_result_chars,
        )
        return bound

    async def __call__(self, goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        tools = self._tools()
        reply = await self.llm.achat(
            self.messages(goal, history, last_error),
            json_schema=PLAN_JSON_SCHEMA,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )
        return validate_plan(_plan_items(reply), tools)

    def messages(
        self, goal: str, history: list[Step], last_error: str | None
    ) -> list[dict[str, Any]]:
        """The chat messages sent to the LLM for one planning call."""
        tools = self._tools()
        catalogue = [
            {"name": name, "description": tool.description, "parameters": tool.parameters_schema}
            for name, tool in tools.items()
        ]
        executed = [self._history_entry(step) for step in history]
        parts = [
            f"Goal: {goal}",
            "Tools:\n" + json.dumps(catalogue, ensure_ascii=False, indent=1),
            "Executed steps, oldest first:\n"
            + (json.dumps(executed, ensure_ascii=False, indent=1) if executed else "none yet"),
            f"Last error: {last_error}" if last_error else "Last error: none (first plan)",
        ]
        return [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    def _tools(self) -> dict[str, Tool]:
        if self.tools is None:
            raise RuntimeError(
                "LLMPlanner has no tools: pass tools=... or use it in a PlanExecuteAgent"
            )
        return self.tools

    def _history_entry(self, step: Step) -> dict[str, Any]:
        result = dumps(step.result)
        if len(result) > self.max_result_chars:
            result = result[: self.max_result_chars] + "…"
        return {
            "id": step.id,
            "revision": step.revision,
            "tool_name": step.tool_name,
            "args": step.args,
            "expected_outcome": step.expected_outcome,
            "status": step.status,
            "result": result,
            "error": step.error,
        }


def _plan_items(reply: LLMReply) -> object:
    """The step list of a reply, or a :class:`TFPlanError` saying what is wrong with it."""
    truncated = " (the reply was cut off by max_tokens)" if reply.finish_reason == "length" else ""
    if reply.tool_calls and not reply.content:
        raise TFPlanError("the planner LLM called a tool instead of returning a plan")
    data = reply.parsed
    if data is None:
        text = reply.content or ""
        fenced = _FENCE.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except ValueError:
            raise TFPlanError(
                f"the planner LLM did not return JSON{truncated}: {text[:200]!r}"
            ) from None
    if isinstance(data, dict) and "steps" in data:
        data = data["steps"]
    if not isinstance(data, list):
        raise TFPlanError(
            f'the planner LLM must return {{"steps": [...]}}{truncated}, '
            f"got {json.dumps(data, default=repr)[:200]}"
        )
    return data
