"""An MCP tool's own ``timeout_s``: a slow call fails with ``TFToolTimeout`` at its line."""

from __future__ import annotations

import pytest

from dcbrain.chain import TFChainInterpreter
from dcbrain.mcp import MCPTools, TFMCPError
from dcbrain.tfplan import Limits, TFToolTimeout
from support.mcp_servers import hostile_command


def test_a_slow_mcp_tool_past_its_timeout_fails_the_call() -> None:
    with MCPTools(command=hostile_command("--tools", "echo", "--slow", "30"), name="slowpoke",
                  timeout_s=20, tool_timeout_s={"slow": 0.5}) as tools:
        by_name = {tool.name: tool for tool in tools}
        assert (by_name["echo"].timeout_s, by_name["slow"].timeout_s) == (20, 0.5)
        interpreter = TFChainInterpreter({}, tools=list(tools), limits=Limits(timeout_s=20))
        with pytest.raises(TFToolTimeout) as raised:
            interpreter.evaluate("a = echo(x=1)\nslow(x=2)")
    assert raised.value.line == 2
    assert "tool 'slow' did not return within its timeout_s of 0.5 s" in str(raised.value)


def test_a_per_tool_timeout_for_a_tool_the_server_does_not_list_is_refused() -> None:
    tools = MCPTools(command=hostile_command("--tools", "echo"), name="notes",
                     tool_timeout_s={"ehco": 1})
    with pytest.raises(TFMCPError, match="tool_timeout_s names 'ehco', which it does not list"):
        tools.connect()
