"""``dcbrain mcp``: a call that needs approval is asked of the client's user through MCP
elicitation (the SDK's own client and server, on a session: ``mode="legacy"``)."""

from __future__ import annotations

from typing import Any

import mcp.types as types

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.mcp.server import create_server
from dcbrain.tools import Tool
from mcp import Client
from support.brain_scripts import plan, verdict

DELETE = 'return delete_file(path="notes/old.txt")'


def brain_with(deleted: list[str], plans: list[str]) -> DCBrain:
    def delete_file(path: str) -> str:
        """Delete the file at ``path``."""
        deleted.append(path)
        return f"deleted {path}"

    return DCBrain(default_llm=ScriptedLLM([plan(p) for p in plans]),
                   default_validate_llm=ScriptedLLM([verdict(True)]),
                   tools=[Tool(delete_file, requires_approval=True)], isolation="inprocess")


async def test_the_client_user_approves_through_elicitation() -> None:
    deleted: list[str] = []
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approved": True, "reason": ""})

    async with Client(create_server(brain_with(deleted, [DELETE])),
                      elicitation_callback=elicit, mode="legacy") as client:
        result = await client.call_tool("ask", {"question": "delete the old notes"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["answer"] == "deleted notes/old.txt"
    assert deleted == ["notes/old.txt"]
    [params] = asked
    message = getattr(params, "message", "")
    assert "delete_file" in message and "notes/old.txt" in message and "line 1" in message


async def test_a_decline_denies_the_call_and_the_brain_plans_again() -> None:
    deleted: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    brain = brain_with(deleted, [DELETE, 'return "kept the file"'])
    async with Client(create_server(brain), elicitation_callback=elicit,
                      mode="legacy") as client:
        result = await client.call_tool("ask", {"question": "delete the old notes"})
    assert result.structured_content is not None
    assert result.structured_content["answer"] == "kept the file"
    assert deleted == []


async def test_a_client_without_elicitation_never_lets_the_call_run() -> None:
    deleted: list[str] = []
    brain = brain_with(deleted, [DELETE, 'return "could not ask"'])
    async with Client(create_server(brain)) as client:
        result = await client.call_tool("ask", {"question": "delete the old notes"})
    assert result.structured_content is not None
    assert result.structured_content["answer"] == "could not ask"
    assert deleted == []
