"""MCPTools: a real MCP server's tools in plans, chains and agents (stdio and HTTP)."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcbrain import Chain, ScriptedLLM, TFChainInterpreter, ToolCall
from dcbrain.agent import PlanExecuteAgent, Step
from dcbrain.config import ConfigError, build_brain, load_config
from dcbrain.mcp import MCPTools, TFMCPError
from dcbrain.tfplan import Interpreter, TFCheckError, TFInterpreterError
from support.mcp_servers import CALC_SERVER, calc_http_server, free_port


@pytest.fixture(scope="module")
def calc_http_url() -> Iterator[str]:
    with calc_http_server() as url:
        yield url


@pytest.fixture(scope="module")
def calc() -> Iterator[MCPTools]:
    with MCPTools(command=[sys.executable, str(CALC_SERVER)], name="calc") as tools:
        yield tools


def test_the_servers_tools_are_tools_with_their_schemas(calc: MCPTools) -> None:
    by_name = {tool.name: tool for tool in calc}
    assert set(by_name) == {"add", "shout_text", "greet", "count", "calls", "explode"}
    add = by_name["add"]
    assert add.description == "Add two integers."
    assert add.parameters_schema["required"] == ["a"]
    assert add.parameters_schema["additionalProperties"] is False
    assert str(add.signature) == "(*, a, b=None)"
    assert by_name["shout_text"].returns_schema == {"title": "Result", "type": "string"}
    assert len(calc) == 6 and calc[0].name in by_name


def test_plans_call_mcp_tools_and_get_plain_data(calc: MCPTools) -> None:
    interpreter = TFChainInterpreter({}, tools=calc)
    result = interpreter.evaluate(
        "s = add(a=2, b=3)\n"
        "return [s['total'], s['parts'], shout_text(text='hi'), greet(name='ada'), count(n=3)]"
    )
    assert result.value == [5, [2, 3], "HI", "hello ada", [1, 2, 3]]


def test_an_unknown_keyword_is_a_check_error_before_the_plan_runs(calc: MCPTools) -> None:
    interpreter = TFChainInterpreter({}, tools=calc)
    before = interpreter.evaluate("return calls()").value
    problems = interpreter.check("x = add(a=1)\ny = add(a=1, c=2)\nreturn y")
    assert [(p.line, p.col, p.message) for p in problems] == [
        (2, 14, "tool 'add' has no argument 'c' (expected: a, b)")]
    with pytest.raises(TFCheckError, match="2:14"):
        interpreter.evaluate("x = add(a=1)\ny = add(a=1, c=2)\nreturn y")
    missing = interpreter.check("return add(b=1)")
    assert [p.message for p in missing] == ["tool 'add' is missing required argument 'a'"]
    assert interpreter.evaluate("return calls()").value == before  # nothing ran


def test_wrong_values_and_tool_errors_fail_the_plan_clearly(calc: MCPTools) -> None:
    interpreter = TFChainInterpreter({}, tools=calc)
    with pytest.raises(TFInterpreterError, match=r"argument 'a': 'x' is not of type 'integer'"):
        interpreter.evaluate("return add(a='x')")
    with pytest.raises(TFInterpreterError, match=r"MCP tool 'explode' of server 'calc': .*"):
        interpreter.evaluate("return explode()")


def test_tools_work_from_plan_threads_and_parallel_branches(calc: MCPTools) -> None:
    interpreter = TFChainInterpreter({}, tools=calc)
    results: list[object] = []

    def run() -> None:
        plan = "a, b = parallel(add(a=1, b=1), add(a=2, b=2))\nreturn a['total'] + b['total']"
        results.append(interpreter.evaluate(plan).value)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == [6, 6, 6]


async def test_async_plans_and_agents_reach_the_sessions_loop(calc: MCPTools) -> None:
    interpreter = TFChainInterpreter({}, tools=calc)
    assert (await interpreter.aevaluate("return add(a=40, b=2)['total']")).value == 42

    def planner(goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        if history:
            return []
        return [Step(1, "add", {"a": 1, "b": 2}),
                Step(2, "add", {"a": {"$ref": "step-1.result.total"}, "b": 10})]

    session = await PlanExecuteAgent(planner, list(calc)).arun("g")
    assert session.ok and session.history[-1].result["total"] == 13


async def test_a_chains_model_calls_an_mcp_tool(calc: MCPTools) -> None:
    llm = ScriptedLLM([ToolCall("c1", "add", {"a": 1, "b": 2}), "three"])
    result = await Chain(name="c", llm=llm, tools=list(calc)).async_run("1+2")
    assert result.tool_returns[0]["result"] == {"total": 3, "parts": [1, 2]}
    offered = {spec["function"]["name"] for spec in llm.requests[0].tools or []}
    assert "shout_text" in offered


def test_streamable_http_servers_work_the_same(calc_http_url: str) -> None:
    with MCPTools(url=calc_http_url, prefix="calc_") as tools:
        assert tools.name == "127.0.0.1"
        interpreter = TFChainInterpreter({}, tools=tools)
        assert interpreter.evaluate("return calc_add(a=1)['total']").value == 2
        assert interpreter.check("return calc_add(a=1, z=1)")[0].col == 22


async def test_async_with_connects_and_closes(calc_http_url: str) -> None:
    async with MCPTools(url=calc_http_url) as tools:
        assert await tools[0].acall(**({"a": 1} if tools[0].name == "add" else {})) is not None
    with pytest.raises(TFMCPError, match="closed"):
        await tools._call("add", {"a": 1}, wrapped=False)


def test_start_up_failures_name_the_server_and_what_failed(tmp_path: Path) -> None:
    with pytest.raises(TFMCPError, match=r"MCP server 'ghost' \(no-such-program-x\) did not "
                                         r"start: command not found"):
        MCPTools(command=["no-such-program-x"], name="ghost").connect()
    crash = tmp_path / "crash.py"
    crash.write_text("import sys\nprint('missing API token', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(TFMCPError) as caught:
        MCPTools(command=[sys.executable, str(crash)]).connect()
    message = str(caught.value)
    assert message.startswith("MCP server 'crash' (")
    assert "its stderr ends with:\n  missing API token" in message
    port = free_port()
    with pytest.raises(TFMCPError, match=rf"MCP server 'down' \(http://127.0.0.1:{port}/mcp\) "
                                         "did not start: ConnectError"):
        MCPTools(url=f"http://127.0.0.1:{port}/mcp", name="down", startup_timeout=20).connect()
    with pytest.raises(ValueError, match="exactly one of"):
        MCPTools()


def test_config_servers_become_the_brains_tools(tmp_path: Path, calc_http_url: str) -> None:
    (tmp_path / "calc_server.py").write_text(CALC_SERVER.read_text())
    config_file = tmp_path / "dcbrain.toml"
    config_file.write_text(
        "[llm.main]\nmodel = 'm'\nbase_url = 'http://127.0.0.1:9/v1'\napi_key = 'k'\n"
        "[memory]\npath = ''\n"
        f"[mcp.calc]\ncommand = ['{Path(sys.executable).as_posix()}', 'calc_server.py']\n"
        f"[mcp.remote]\nurl = '{calc_http_url}'\nprefix = 'remote_'\n"
    )
    brain = build_brain(load_config(config_file))
    names = {tool.name for tool in brain.tools}
    assert {"add", "shout_text", "remote_add", "remote_count"} <= names


def test_config_errors_name_the_mcp_key(tmp_path: Path) -> None:
    config_file = tmp_path / "dcbrain.toml"
    config_file.write_text("[mcp.both]\ncommand = ['x']\nurl = 'http://127.0.0.1:1/mcp'\n"
                           "[mcp.neither]\nprefix = 'n_'\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config_file)
    assert caught.value.problems == [
        'mcp.both: give command = [...] (stdio) or url = "..." (HTTP)',
        'mcp.neither: give command = [...] (stdio) or url = "..." (HTTP)',
    ]
    config_file.write_text("[llm.main]\nmodel = 'm'\napi_key = 'k'\n[memory]\npath = ''\n"
                           "[mcp.ghost]\ncommand = ['no-such-program-x', '--serve']\n")
    with pytest.raises(ConfigError, match=r"mcp.ghost: MCP server 'ghost' .* command not found"):
        build_brain(load_config(config_file))


def test_closing_twice_is_harmless_and_reconnecting_works() -> None:
    tools = MCPTools(command=[sys.executable, str(CALC_SERVER)])
    assert asyncio.run(tools[0].acall(**({"a": 1} if tools[0].name == "add" else {})))
    tools.close()
    tools.close()
    assert len(tools) == 6  # connects again
    tools.close()


def test_the_plan_interpreter_calls_mcp_tools_directly(calc: MCPTools) -> None:
    interpreter = Interpreter(tools=calc)
    plan = "s = add(a=2, b=3)\nreturn [s['total'], shout_text(text='hi')]"
    assert interpreter.run(plan, check=True).value == [5, "HI"]
    assert asyncio.run(interpreter.arun(plan, check=True)).value == [5, "HI"]
    in_process = Interpreter(tools=calc, isolation="inprocess")
    assert in_process.run("return greet(name='ada')").value == "hello ada"
    with pytest.raises(TFInterpreterError, match=r"argument 'a': 'x' is not of type 'integer'"):
        interpreter.run("return add(a='x')")

