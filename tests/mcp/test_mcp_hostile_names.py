"""What an operator declares must match the server's tools, and what a hostile server
names its tools stays contained: a ``require_approval`` pattern matching no tool fails the
start-up (a misspelt guard would otherwise guard nothing), a name too long to be a tool's
is refused, and a name is the identifier a plan writes (NFKC, as Python reads it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.config import ConfigError, build_brain, load_config
from dcbrain.exceptions import TFChainError
from dcbrain.mcp import MCPTools, TFMCPError
from dcbrain.mcp.limits import MAX_TOOL_NAME_CHARS
from support.mcp_servers import MAIL_SERVER, hostile_command

OFFLINE_LLM = ('[llm.main]\nmodel = "m"\napi_key = "none"\nbase_url = "http://127.0.0.1:9/v1"\n'
               '[memory]\npath = ""\n')
MAIL = f"[mcp.mail]\ncommand = {json.dumps([sys.executable, str(MAIL_SERVER)])}\n"


def test_a_require_approval_pattern_matching_no_tool_fails_the_start_up() -> None:
    guarded = MCPTools(command=hostile_command("--tools", "send_mail,read_mail"), name="m",
                       require_approval=["sned_*"])
    with pytest.raises(TFMCPError, match=r"MCP server 'm' .*require_approval: 'sned_\*' "
                                         r"matches none of its tools \(send_mail, read_mail\)"):
        guarded.connect()
    every = MCPTools(command=hostile_command("--tools", "send_mail"), name="m",
                     require_approval=["*"])
    try:
        assert [tool.requires_approval for tool in every] == [True]
    finally:
        every.close()


def test_a_misspelt_require_approval_in_the_config_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "dcbrain.toml"
    path.write_text(OFFLINE_LLM + MAIL + 'require_approval = ["sendd"]\n')
    with pytest.raises(ConfigError, match=r"mcp\.mail: MCP server 'mail' \(.*\) did not start: "
                                          r"require_approval: 'sendd' matches none of its tools"):
        build_brain(load_config(path))


def test_a_tool_name_longer_than_a_tools_is_refused_and_the_message_stays_short() -> None:
    long = "a" * (MAX_TOOL_NAME_CHARS + 1)
    with pytest.raises(TFMCPError) as caught:
        MCPTools(command=hostile_command("--tools", f"ok,{long}"), name="long").connect()
    message = str(caught.value)
    assert f"longer than {MAX_TOOL_NAME_CHARS} characters" in message
    assert len(message) < 1000


def test_the_listing_in_a_refusal_is_clipped() -> None:
    names = ",".join(f"tool_{i}" for i in range(500))
    with pytest.raises(TFMCPError) as caught:
        MCPTools(command=hostile_command("--tools", names), name="many",
                 require_approval=["nothing_*"]).connect()
    listing = str(caught.value).split("matches none of its tools", 1)[1]
    assert "tool_0" in listing and "and 480 more" in listing and len(listing) < 1000


def test_a_name_is_read_as_python_reads_it_so_a_look_alike_cannot_pass_the_clash_check(
) -> None:
    def find(text: str) -> str:
        """The user's own search."""
        return "local"

    ligature = MCPTools(command=hostile_command("--tools", "\ufb01nd"), name="lig")
    try:
        assert [tool.name for tool in ligature] == ["find"]
        with pytest.raises(TFChainError, match="clashes with"):
            DCBrain(default_llm=ScriptedLLM([]), tools=[find, *ligature])
    finally:
        ligature.close()


def test_a_huge_tool_description_is_cut_before_it_reaches_a_planning_prompt() -> None:
    from dcbrain.mcp.limits import MAX_TOOL_DESCRIPTION_CHARS

    wordy = MCPTools(command=hostile_command("--tools", "echo", "--description", "1000000"),
                     name="wordy")
    try:
        [echo] = list(wordy)
        assert len(echo.description) <= MAX_TOOL_DESCRIPTION_CHARS + 10
        assert echo.description.endswith("(cut)")
    finally:
        wordy.close()
