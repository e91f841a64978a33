"""``dcbrain mcp``: the brain served over MCP, used by the SDK's own client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.client.stdio import stdio_client

import dcbrain
from dcbrain import TFChainInterpreter
from dcbrain.mcp import MCPTools
from mcp import Client, StdioServerParameters
from support.fake_openai import FakeOpenAIServer
from support.mcp_servers import CALC_SERVER, free_port, wait_for_port

PLAN_REPLY = "```tf_plan\ns = add(a=40, b=2)\nreturn s['total']\n```"
SOURCE = str(Path(dcbrain.__file__).resolve().parents[1])


def write_config(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    """A brain on the scripted OpenAI-compatible server whose tools come from an MCP server."""
    (tmp_path / "calc_server.py").write_text(CALC_SERVER.read_text())
    path = tmp_path / "dcbrain.toml"
    path.write_text(
        "[llm.main]\n"
        f'base_url = "{server.base_url}"\nmodel = "fake-model"\napi_key_env = "FAKE_API_KEY"\n'
        "max_retries = 0\n"
        '[memory]\npath = ""\n'
        f"[mcp.calc]\ncommand = ['{Path(sys.executable).as_posix()}', 'calc_server.py']\n"
    )
    return path


def child_env() -> dict[str, str]:
    return {"PYTHONPATH": SOURCE, "FAKE_API_KEY": "sk-test"}


def script_a_solved_run(server: FakeOpenAIServer) -> None:
    server.reply(PLAN_REPLY)
    server.reply_json({"is_solved": True, "suggestion": ""})


async def test_ask_over_stdio_reports_progress_and_answers(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = write_config(tmp_path, fake_openai)
    script_a_solved_run(fake_openai)
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "dcbrain.cli", "mcp", "--config", str(config)],
        env=child_env(), cwd=str(tmp_path))
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(stdio_client(parameters)) as client:
        listing = await client.list_tools()
        tools = {tool.name: tool for tool in listing.tools}
        assert set(tools) == {"ask", "decide"}  # decide: approvals on clients that cannot elicit
        assert set(tools["ask"].input_schema["properties"]) == {
            "question", "conversation_id", "run_id"}
        result = await client.call_tool("ask", {"question": "What is 40 + 2?",
                                                "conversation_id": "c-1"},
                                        progress_callback=on_progress)
    assert not result.is_error, result.content
    answer: Any = result.structured_content
    assert answer["answer"] == 42
    assert (answer["status"], answer["reason"]) == ("succeeded", "validated")
    assert answer["conversation_id"] == "c-1" and answer["plans"] == 1
    messages = [message or "" for _, message in progress]
    assert [value for value, _ in progress] == list(range(1, len(progress) + 1))
    assert messages[0] == "question: What is 40 + 2?"
    assert "plan:\ns = add(a=40, b=2)\nreturn s['total']" in messages
    assert "call add(a=40, b=2)" in messages
    assert any(m.startswith("add → ") and '"total": 42' in m for m in messages)
    assert "validator: solved" in messages
    assert any(m.startswith("state: ") for m in messages)
    assert messages[-1] == "finished: succeeded (validated)"


async def test_an_empty_question_is_an_error(tmp_path: Path,
                                             fake_openai: FakeOpenAIServer) -> None:
    config = write_config(tmp_path, fake_openai)
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "dcbrain.cli", "mcp", "-c", str(config)],
        env=child_env(), cwd=str(tmp_path))
    async with Client(stdio_client(parameters)) as client:
        result = await client.call_tool("ask", {"question": "   "})
    assert result.is_error
    assert "the question is empty" in result.content[0].text  # type: ignore[union-attr]
    assert fake_openai.requests == []


def test_ask_over_http_is_a_tool_of_another_plan(tmp_path: Path,
                                                 fake_openai: FakeOpenAIServer) -> None:
    config = write_config(tmp_path, fake_openai)
    script_a_solved_run(fake_openai)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "mcp", "--http", "--port", str(port),
         "--config", str(config)],
        cwd=tmp_path, env={**os.environ, **child_env()},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)  # type: ignore[arg-type]
        with MCPTools(url=f"http://127.0.0.1:{port}/mcp", name="brain") as tools:
            interpreter = TFChainInterpreter({}, tools=tools)
            value = interpreter.evaluate("r = ask(question='What is 40 + 2?')\n"
                                         "return [r['answer'], r['status']]").value
            assert value == [42, "succeeded"]
            problems = interpreter.check("return ask(query='x')")
            assert [p.message for p in problems] == [
                "tool 'ask' is missing required argument 'question'",
                "tool 'ask' has no argument 'query' (expected: question, conversation_id, run_id)"]
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=20)
    assert f"dcbrain MCP server on http://127.0.0.1:{port}/mcp" in stderr


def test_config_errors_and_a_busy_port_exit_2_before_serving(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    (tmp_path / "bad.toml").write_text("[mcp.x]\nprefix = 'a'\n")
    bad = subprocess.run([sys.executable, "-m", "dcbrain.cli", "mcp", "-c", "bad.toml"],
                         cwd=tmp_path, env={**os.environ, **child_env()}, capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2
    assert 'mcp.x: give command = [...] (stdio) or url = "..." (HTTP)' in bad.stderr
    assert bad.stdout == ""
    config = write_config(tmp_path, fake_openai)
    with socket_on_free_port() as port:
        busy = subprocess.run(
            [sys.executable, "-m", "dcbrain.cli", "mcp", "--http", "--port", str(port),
             "-c", str(config)],
            cwd=tmp_path, env={**os.environ, **child_env()}, capture_output=True, text=True,
            timeout=120)
    assert busy.returncode == 2
    assert f"error: cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "dcbrain MCP server on" not in busy.stderr


class socket_on_free_port:
    """Holds a listening socket on a free 127.0.0.1 port."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


ODD_PLAN = ("return {'big': 10 ** 5000, 'floats': [float('nan'), float('inf')], "
            "chr(0xD800): 'key'}")


async def ask_with_progress(brain: Any, question: str) -> tuple[Any, list[str]]:
    """Ask ``brain`` through its MCP server; the tool result and the progress messages."""
    from dcbrain.mcp.server import create_server

    messages: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async with Client(create_server(brain)) as client:
        result = await client.call_tool("ask", {"question": question},
                                        progress_callback=on_progress)
    return result, messages


async def test_an_answer_with_odd_values_is_sent_as_json() -> None:
    from dcbrain import DCBrain, ScriptedLLM
    from support.brain_scripts import plan, verdict

    brain = DCBrain(default_llm=ScriptedLLM([plan(ODD_PLAN)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]))
    result, messages = await ask_with_progress(brain, "odd values")
    assert not result.is_error, result.content
    answer: Any = result.structured_content
    assert answer["status"] == "succeeded"
    assert answer["answer"] == {"big": hex(10**5000), "floats": ["nan", "inf"], "\ufffd": "key"}
    assert any(m.startswith("plan result: ") and "0x" in m for m in messages), messages
    assert messages[-1] == "finished: succeeded (validated)"


KEYERROR_AFTER_ADD = "s = add(a=40, b=2)\nreturn s['missing']"
ADD_AGAIN = "s = add(a=40, b=2)\nreturn s['total']"


async def test_progress_names_each_tool_call_and_tells_a_reused_one_apart() -> None:
    from dcbrain import DCBrain, ScriptedLLM
    from support.brain_scripts import plan, verdict

    added: list[int] = []

    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers."""
        added.append(a + b)
        return {"total": a + b}

    brain = DCBrain(default_llm=ScriptedLLM([plan(KEYERROR_AFTER_ADD), plan(ADD_AGAIN)]),
                    default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])
    result, messages = await ask_with_progress(brain, "What is 40 + 2?")
    assert not result.is_error, result.content
    assert added == [42]  # the second plan's add returned the recorded result
    calls = [m for m in messages if m.startswith(("call ", "add "))]
    assert calls == ["call add(a=40, b=2)", 'add → {"total": 42}',
                     'add reused from an earlier plan → {"total": 42}'], messages


async def ask_over_stdio(tmp_path: Path, server: FakeOpenAIServer, *options: str) -> str:
    """Ask one question of ``dcbrain mcp OPTIONS`` over stdio; what it wrote on stderr."""
    config = write_config(tmp_path, server)
    script_a_solved_run(server)
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dcbrain.cli", "mcp", "--config", str(config), *options],
        env=child_env(), cwd=str(tmp_path))
    errors = tmp_path / "stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(parameters, errlog=errlog)) as client:
            result = await client.call_tool("ask", {"question": "What is 40 + 2?"})
    assert not result.is_error, result.content
    return errors.read_text(encoding="utf-8")


async def test_ask_over_stdio_logs_only_warnings_unless_asked(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    quiet = await ask_over_stdio(tmp_path, fake_openai)
    assert quiet == ""
    verbose = await ask_over_stdio(tmp_path, fake_openai, "--log-level", "info")
    assert "INFO" in verbose and "HTTP Request: POST" in verbose  # httpx, a chatty library
