"""MCP servers are untrusted: they cannot take over a name a plan trusts, and nothing they
send can exhaust the host (real hostile server subprocesses, over stdio and HTTP)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dcbrain import Chain, DCBrain, ScriptedLLM, TFChainInterpreter
from dcbrain.chain import DCChains
from dcbrain.config import ConfigError, build_brain, load_config
from dcbrain.exceptions import TFChainError
from dcbrain.mcp import MCPTools, TFMCPError
from dcbrain.tfplan import Interpreter, TFInterpreterError
from support.mcp_servers import hostile_command, hostile_http_server

MiB = 1 << 20


def get_note(id: int) -> str:
    """The user's own note reader."""
    return f"local note {id}"


def write_config(folder: Path, servers: str, tools: str = "") -> Path:
    """A dcbrain.toml in ``folder`` with a tools.py of ``tools`` and the ``[mcp.*]`` tables."""
    (folder / "tools.py").write_text(tools or "def get_note(id: int) -> str:\n"
                                     "    return f'local note {id}'\n")
    config = folder / "dcbrain.toml"
    config.write_text("tools = ['tools.py']\n"
                      "[llm.main]\nmodel = 'm'\nbase_url = 'http://127.0.0.1:9/v1'\n"
                      "api_key = 'k'\n[memory]\npath = ''\n" + servers)
    return config


def server_table(name: str, *options: str, extra: str = "") -> str:
    command = ", ".join(repr(Path(part).as_posix()) for part in hostile_command(*options))
    return f"[mcp.{name}]\ncommand = [{command}]\n{extra}"


# -- names: an MCP tool never takes over a builtin or a local tool ------------------------
def test_an_mcp_tool_named_like_a_local_tool_is_a_config_error_naming_both(
        tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("notes", "--tools", "get_note,search"))
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert caught.value.problems == [
        "mcp.notes: tool 'get_note' clashes with local tool 'get_note' from tools.py; "
        "rename one, or give the server a prefix (prefix = \"notes_\")"]


def test_with_a_prefix_the_plan_calls_the_local_tool_and_the_server_its_own(
        tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("notes", "--tools", "get_note",
                                                 extra="prefix = 'notes_'\n"))
    brain = build_brain(load_config(config))
    interpreter = TFChainInterpreter({}, tools=brain.tools)
    value = interpreter.evaluate("return [get_note(id=1), notes_get_note(id=2)]").value
    assert value == ["local note 1", 'get_note from the server: {"id": 2}']


def test_an_mcp_tool_named_like_a_builtin_is_a_config_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("x", "--tools", "dict,echo"))
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert caught.value.problems == [
        "mcp.x: tool 'dict' clashes with the tf_plan builtin dict; "
        "give the server a prefix (prefix = \"x_\")"]


def test_two_servers_with_a_tool_of_the_same_name_are_a_config_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("a", "--tools", "search")
                          + server_table("b", "--tools", "search,fetch"))
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert caught.value.problems == [
        "mcp.b: tool 'search' clashes with mcp.a tool 'search'; "
        "rename one, or give the server a prefix (prefix = \"b_\")"]


def test_a_tool_a_plan_cannot_call_and_a_local_tool_named_like_a_builtin_are_config_errors(
        tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("x", "--tools", "_secret"),
                          tools="def sum(values: list[int]) -> int:\n    return 0\n")
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert caught.value.problems == [
        "tools: local tool 'sum' from tools.py clashes with the tf_plan builtin sum",
        "mcp.x: tool '_secret' cannot be called from plans (names starting with '_' are "
        "reserved); give the server a prefix (prefix = \"x_\")"]


def test_chains_come_before_tools_of_the_same_name(tmp_path: Path) -> None:
    config = write_config(tmp_path, "[chains.get_note]\nprompt = '{{ input }}'\n"
                          + server_table("notes", "--tools", "get_note"))
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(config))
    assert caught.value.problems == [
        "chains.get_note: a tool of the same name is defined in tools.py; rename one of them",
        "mcp.notes: tool 'get_note' clashes with chain 'get_note'; rename one, or give the "
        "server a prefix (prefix = \"notes_\")"]


@pytest.fixture(scope="module")
def notes() -> Iterator[MCPTools]:
    with MCPTools(command=hostile_command("--tools", "get_note,dict"), name="notes") as tools:
        yield tools


def test_the_library_refuses_two_tools_of_one_name_whatever_their_order(
        notes: MCPTools) -> None:
    mcp_get_note = next(tool for tool in notes if tool.name == "get_note")
    for tools in ([get_note, mcp_get_note], [mcp_get_note, get_note]):
        with pytest.raises(TFChainError) as caught:
            TFChainInterpreter({}, tools=tools)
        message = str(caught.value)
        assert "MCP server 'notes' tool 'get_note'" in message
        assert "tool 'get_note' (function get_note in tests/mcp/test_mcp_hostile.py:" in message
        with pytest.raises(TFChainError, match="MCP server 'notes' tool 'get_note'"):
            DCBrain(default_llm=ScriptedLLM([]), tools=tools)
        with pytest.raises(TFChainError, match="MCP server 'notes' tool 'get_note'"):
            DCChains({"answer": Chain(name="answer", llm=ScriptedLLM([]))}, tools=tools)
        with pytest.raises(ValueError, match="MCP server 'notes' tool 'get_note'"):
            Interpreter(tools=tools)


def test_the_library_refuses_a_tool_named_like_a_builtin(notes: MCPTools) -> None:
    mcp_dict = next(tool for tool in notes if tool.name == "dict")
    with pytest.raises(TFChainError, match="MCP server 'notes' tool 'dict' clashes with the "
                                           "tf_plan builtin dict"):
        TFChainInterpreter({}, tools=[mcp_dict])
    with pytest.raises(TFChainError, match="clashes with the tf_plan builtin dict"):
        DCBrain(default_llm=ScriptedLLM([]), tools=[mcp_dict])


def test_tool_names_a_server_lists_twice_after_conversion_are_refused() -> None:
    with pytest.raises(TFMCPError, match=r"MCP server 'twins' .* tools 'a-b' and 'a_b' are "
                                         r"both named 'a_b' in plans"):
        MCPTools(command=hostile_command("--tools", "a-b,a_b"), name="twins").connect()


# -- sizes: what a server sends is capped before it is parsed -----------------------------
def test_an_oversized_stdio_result_fails_the_call_and_the_session_goes_on() -> None:
    with MCPTools(command=hostile_command("--big", str(100 * MiB)), name="big") as tools:
        interpreter = TFChainInterpreter({}, tools=tools)
        started = time.monotonic()
        with pytest.raises(TFInterpreterError,
                           match=r"MCP server 'big': tool 'big' failed: .*more than 16 MiB "
                                 r"\(max_message_bytes\)"):
            interpreter.evaluate("return big()")
        assert time.monotonic() - started < 15  # it took minutes of CPU
        assert interpreter.evaluate("return echo(n=1)").value == \
            'echo from the server: {"n": 1}'


def test_a_result_that_never_ends_fails_the_call_once_past_the_limit() -> None:
    with MCPTools(command=hostile_command("--big", "endless"), name="big") as tools:
        started = time.monotonic()
        with pytest.raises(TFInterpreterError, match=r"more than 16 MiB \(max_message_bytes\)"):
            TFChainInterpreter({}, tools=tools).evaluate("return big()")
        assert time.monotonic() - started < 15  # it waited for the call's timeout


def test_the_message_limit_is_a_setting() -> None:
    command = hostile_command("--big", "600000")
    with MCPTools(command=command, name="big", max_message_bytes=MiB) as tools:
        assert TFChainInterpreter({}, tools=tools).evaluate("return len(big())").value == 600000
    with MCPTools(command=command, name="big", max_message_bytes=MiB // 2) as tools, \
            pytest.raises(TFInterpreterError, match=r"more than 512 KiB \(max_message_bytes\)"):
        TFChainInterpreter({}, tools=tools).evaluate("return big()")


def test_an_oversized_http_result_fails_the_call_and_the_session_goes_on() -> None:
    with hostile_http_server("--big", str(100 * MiB)) as url, \
            MCPTools(url=url, name="big") as tools:
        interpreter = TFChainInterpreter({}, tools=tools)
        with pytest.raises(TFInterpreterError,
                           match=r"MCP server 'big': tool 'big' failed: .*more than 16 MiB "
                                 r"\(max_message_bytes\)"):
            interpreter.evaluate("return big()")
        assert interpreter.evaluate("return echo(n=1)").value == \
            'echo from the server: {"n": 1}'


def test_a_compressed_http_answer_is_refused_before_it_is_inflated() -> None:
    with hostile_http_server("--gzip") as url, pytest.raises(
            TFMCPError, match=r"MCP server 'zip' .* compressed"):
        MCPTools(url=url, name="zip").connect()


# -- listings: a tools/list flood is cut off --------------------------------------------
def test_endless_tool_list_pages_are_cut_off_naming_the_server(tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table("flood", "--pages", "endless"),
                          tools="def other() -> int:\n    return 1\n")
    with pytest.raises(ConfigError, match=r"mcp.flood: MCP server 'flood' .* more than 100 "
                                          r"pages \(max_list_pages\)"):
        build_brain(load_config(config))


def test_a_huge_tool_list_is_cut_off_at_the_tool_limit() -> None:
    with pytest.raises(TFMCPError, match=r"MCP server 'flood' .* more than 1000 tools "
                                         r"\(max_tools\)"):
        MCPTools(command=hostile_command("--pages", "endless", "--per-page", "400"),
                 name="flood").connect()


def test_a_tool_list_larger_than_its_byte_limit_is_cut_off() -> None:
    with pytest.raises(TFMCPError, match=r"MCP server 'flood' .* more than 64 KiB "
                                         r"\(max_list_bytes\)"):
        MCPTools(command=hostile_command("--pages", "endless", "--per-page", "50"),
                 name="flood", max_list_bytes=64 * 1024).connect()


def test_list_limits_are_settings_in_the_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, server_table(
        "flood", "--pages", "3", "--per-page", "2",
        extra="max_list_pages = 2\nmax_tools = 10\nmax_message_bytes = 1048576\n"
              "max_list_bytes = 1048576\n"), tools="def other() -> int:\n    return 1\n")
    with pytest.raises(ConfigError, match=r"mcp.flood: .* more than 2 pages"):
        build_brain(load_config(config))

