"""``dcbrain mcp --shared``: an MCP session without elicitation queues its questions in the
store a ``dcbrain serve`` executes, so a call waiting for approval is decided over HTTP (or
with ``decide``) and the session's ``ask`` gets the outcome (real processes: the MCP server
over stdio, the server on the same SQLite file, a scripted OpenAI-compatible LLM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.stdio import stdio_client

from mcp import Client, StdioServerParameters
from support.durable_processes import (
    answer_every_run,
    count,
    free_port,
    planner_requests,
    start,
    stop,
    wait_healthy,
    write_config,
)
from support.fake_openai import FakeOpenAIServer

TOOLS = ("step_one", "step_two", "step_three")


@asynccontextmanager
async def served(tmp_path: Path, llm: FakeOpenAIServer) -> AsyncIterator[tuple[str, Client]]:
    """``dcbrain serve`` and a ``dcbrain mcp --shared`` session on one config and store."""
    answer_every_run(llm)
    config = write_config(tmp_path, llm, delay_s=0.0, approval=("step_two",))
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    server: subprocess.Popen[bytes] = start(["serve", "--config", str(config), "--port",
                                             str(port)], log)
    try:
        wait_healthy(server, base_url, log)
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "dcbrain.cli", "mcp", "--config", str(config), "--shared"],
            env={"PYTHONPATH": os.pathsep.join(sys.path), "FAKE_API_KEY": "sk-test"},
            cwd=str(tmp_path))
        async with Client(stdio_client(parameters)) as client:
            yield base_url, client
    finally:
        stop(server)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] = result.structured_content
    return content


def decide_with_the_cli(tmp_path: Path, run_id: str, call_id: str, args_hash: str,
                        url: str | None = None) -> None:
    """``dcbrain runs approve`` on the config's database (or through the server at
    ``url``); once only."""
    where = ["--url", url] if url is not None else []

    def runs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dcbrain.cli", "runs", *args, "--config",
             str(tmp_path / "dcbrain.toml")],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
                 "FAKE_API_KEY": "sk-test"},
            cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=120)

    done = runs("approve", run_id, call_id, "--args-hash", args_hash, *where)
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert (decision["run_id"], decision["approved"]) == (run_id, True)
    assert decision["decided_by"] == ("cli" if url is None else "user")
    again = runs("deny", run_id, call_id, *where)
    assert again.returncode == 1 and "already decided" in again.stderr, again.stderr


@pytest.mark.parametrize("decider", ["http", "cli", "cli-url"])
async def test_a_call_waiting_over_mcp_is_decided_elsewhere_and_ask_gets_the_outcome(
    tmp_path: Path, fake_openai: FakeOpenAIServer, decider: str
) -> None:
    async with served(tmp_path, fake_openai) as (base_url, client):
        waiting = structured(await client.call_tool("ask", {"question": "go",
                                                            "conversation_id": "c1"}))
        assert (waiting["status"], waiting["reason"]) == ("waiting", "approval")
        [pending] = waiting["pending_approvals"]
        assert (pending["tool"], pending["arguments"]) == ("step_two", {"x": 2})
        run_id = waiting["run_id"]
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()  # the server sees it
        assert (run["status"], run["conversation_id"]) == ("waiting", "c1")
        [request] = run["approvals"]
        assert (request["call_id"], request["decision"]) == (pending["call_id"], None)
        assert [count(tmp_path, name, "started") for name in TOOLS] == [1, 0, 0]
        if decider == "http":
            decided = httpx.post(
                f"{base_url}/v1/runs/{run_id}/approvals/{request['call_id']}",
                json={"approved": True, "args_hash": request["args_hash"]})
            assert decided.status_code == 200, decided.text
        else:
            decide_with_the_cli(tmp_path, run_id, request["call_id"], request["args_hash"],
                                base_url if decider == "cli-url" else None)
        done = structured(await client.call_tool("ask", {"question": "go", "run_id": run_id}))
        final = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
    assert (done["status"], done["answer"], done["run_id"]) == ("succeeded", 4, run_id)
    assert final["status"] == "succeeded" and final["result"]["final_result"] == 4
    assert [count(tmp_path, name, "started") for name in TOOLS] == [1, 1, 1]
    assert planner_requests(fake_openai) == 1  # the run went on from its journal


async def test_the_decide_tool_decides_in_the_shared_store_and_a_denial_is_the_outcome(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with served(tmp_path, fake_openai) as (base_url, client):
        waiting = structured(await client.call_tool("ask", {"question": "go"}))
        [pending] = waiting["pending_approvals"]
        run_id = waiting["run_id"]
        decided = structured(await client.call_tool("decide", {
            "run_id": run_id, "call_id": pending["call_id"], "approved": False,
            "reason": "not today"}))
        assert decided["pending"] == 0
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        [request] = run["approvals"]
        assert (request["decision"]["approved"], request["decision"]["decided_by"]) == (
            False, "mcp_client")  # the server's record holds the session's decision
        again = await client.call_tool("decide", {"run_id": run_id,
                                                  "call_id": pending["call_id"],
                                                  "approved": True})
        assert again.is_error and "already decided" in str(again.content)
        done = structured(await client.call_tool("ask", {"question": "go", "run_id": run_id}))
    # denied: the planner is told and, scripted to write the same plan, the run fails
    assert (done["status"], done["reason"], done["answer"]) == ("failed", "repeated_plan", None)
    assert count(tmp_path, "step_two", "started") == 0


def test_shared_without_a_store_to_share_exits_2_naming_what_is_missing(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text('[llm.main]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                      'api_key_env = "FAKE_API_KEY"\n[memory]\npath = ""\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "FAKE_API_KEY": "sk-test"}
    for args, message in ((["--shared"], "[memory] path must name the SQLite file"),
                          (["--db", "postgresql://localhost/x"], "--db is for --shared")):
        done = subprocess.run([sys.executable, "-m", "dcbrain.cli", "mcp", "--config",
                               str(config), *args], env=env, cwd=tmp_path,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert message in done.stderr
