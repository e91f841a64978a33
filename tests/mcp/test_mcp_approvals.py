"""``dcbrain mcp``: a call that needs approval is asked of the client's user through MCP
elicitation (the SDK's own client and server, on a session: ``mode="legacy"``)."""

from __future__ import annotations

from typing import Any

import mcp.types as types

from dcbrain import DCBrain, FunctionLLM, ScriptedLLM
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


async def _answer_to_delete(brain: DCBrain, elicit: Any) -> Any:
    """The brain's answer over MCP to "delete the old notes", ``elicit`` asked to approve."""
    async with Client(create_server(brain), elicitation_callback=elicit,
                      mode="legacy") as client:
        result = await client.call_tool("ask", {"question": "delete the old notes"})
    assert result.structured_content is not None
    return result.structured_content["answer"]


async def test_a_decline_denies_the_call_and_the_brain_plans_again() -> None:
    deleted: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    brain = brain_with(deleted, [DELETE, 'return "kept the file"'])
    assert await _answer_to_delete(brain, elicit) == "kept the file"
    assert deleted == []


async def test_a_client_without_elicitation_leaves_the_call_pending_until_decided() -> None:
    deleted: list[str] = []
    brain = brain_with(deleted, [DELETE])
    async with Client(create_server(brain)) as client:
        first = await client.call_tool("ask", {"question": "delete the old notes"})
        assert first.structured_content is not None, first.content
        waiting = first.structured_content
        assert (waiting["status"], waiting["reason"]) == ("waiting", "approval")
        [pending] = waiting["pending_approvals"]
        assert (pending["tool"], pending["arguments"]) == ("delete_file",
                                                           {"path": "notes/old.txt"})
        assert deleted == []  # not run unasked, and not denied either
        assert [r.call_id for r in brain.pending_approvals(waiting["run_id"])] == [
            pending["call_id"]]  # where any other surface of this brain sees and decides it
        decided = await client.call_tool("decide", {
            "run_id": waiting["run_id"], "call_id": pending["call_id"], "approved": True,
            "args_hash": pending["args_hash"]})
        assert decided.structured_content is not None
        assert decided.structured_content["pending"] == 0
        done = await client.call_tool("ask", {"question": "delete the old notes",
                                              "run_id": waiting["run_id"]})
    assert done.structured_content is not None, done.content
    assert (done.structured_content["status"], done.structured_content["answer"]) == (
        "succeeded", "deleted notes/old.txt")
    assert deleted == ["notes/old.txt"]


async def test_deciding_a_call_nobody_waits_for_is_a_tool_error() -> None:
    brain = brain_with([], [])
    async with Client(create_server(brain)) as client:
        result = await client.call_tool("decide", {"run_id": "r", "call_id": "ap-x",
                                                   "approved": True})
    assert result.is_error
    assert "waits for no decision" in str(result.content)


async def test_dcbrain_mcp_over_stdio_asks_before_an_mcp_tool_it_was_told_to_guard(
    tmp_path: Any, fake_openai: Any
) -> None:
    import sys
    from pathlib import Path

    from mcp.client.stdio import stdio_client

    import dcbrain
    from mcp import StdioServerParameters
    from support.mcp_servers import CALC_SERVER

    (tmp_path / "calc_server.py").write_text(CALC_SERVER.read_text())
    config = tmp_path / "dcbrain.toml"
    config.write_text(
        f'[llm.main]\nbase_url = "{fake_openai.base_url}"\nmodel = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\n[memory]\npath = ""\n'
        f"[mcp.calc]\ncommand = ['{Path(sys.executable).as_posix()}', 'calc_server.py']\n"
        'require_approval = ["add"]\n')
    fake_openai.reply("```tf_plan\ns = add(a=40, b=2)\nreturn s['total']\n```")
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    source = str(Path(dcbrain.__file__).resolve().parents[1])
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "dcbrain.cli", "mcp", "--config", str(config)],
        env={"PYTHONPATH": source, "FAKE_API_KEY": "sk-test"}, cwd=str(tmp_path))
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(getattr(params, "message", ""))
        return types.ElicitResult(action="accept", content={"approved": True, "reason": ""})

    async with Client(stdio_client(parameters), elicitation_callback=elicit,
                      mode="legacy") as client:
        result = await client.call_tool("ask", {"question": "What is 40 + 2?"})
    assert result.structured_content is not None
    assert result.structured_content["answer"] == 42, result.content
    [message] = asked
    assert "add(" in message and '"a": 40' in message


async def test_a_hostile_clients_endless_reason_is_clipped_before_the_planner_reads_it() -> None:
    from dcbrain.approvals import MAX_REASON_CHARS

    deleted: list[str] = []
    seen: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept",
                                  content={"approved": False, "reason": "x" * 1_000_000})

    def planner(messages: list[dict[str, Any]]) -> str:
        seen.append("\n".join(str(m["content"]) for m in messages))
        return plan(DELETE if len(seen) == 1 else 'return "kept the file"')

    def delete_file(path: str) -> str:
        """Delete the file at ``path``."""
        deleted.append(path)
        return f"deleted {path}"

    brain = DCBrain(default_llm=FunctionLLM(planner),
                    default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(delete_file, requires_approval=True)], isolation="inprocess")
    assert await _answer_to_delete(brain, elicit) == "kept the file"
    assert deleted == []
    assert len(seen) == 2
    assert "x" * MAX_REASON_CHARS in seen[1] and "x" * (MAX_REASON_CHARS + 1) not in seen[1]
