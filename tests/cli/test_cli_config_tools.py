"""Tools files may define ``Tool`` objects; ``[tool.NAME]``, ``[chains.NAME]`` and
``[mcp.NAME]`` set the approval, timeout, retry and trust options of what plans call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dcbrain import ScriptedLLM, Tool
from dcbrain.config import ConfigError, load_config
from dcbrain.config.composition import build_chains, connect_mcp_servers, load_tools
from dcbrain.retries import Backoff
from support.cli_runner import RunCLI
from support.mcp_servers import CALC_SERVER

TOOLS = '''\
from dcbrain import Tool, tool
from dcbrain.policies import Allow


def lookup(order_id: str) -> str:
    """Find an order."""
    return order_id


def delete_account(account_id: str) -> str:
    """Delete an account for good."""
    return account_id


def refund(amount: float) -> float:
    """Refund an amount."""
    return amount


def _only_own_accounts(call):
    return Allow()


deleting = Tool(delete_account, requires_approval=True, timeout_s=5.0,
                policies=[_only_own_accounts])
paying = Tool(refund, name="pay_back", requires_approval=lambda args: args["amount"] > 100,
              retries=2)


@tool
def notify(text: str) -> str:
    """Send a notification."""
    return text
'''

#: An LLM that is never called: these tests build tools and chains only.
OFFLINE_LLM = ('[llm.main]\nmodel = "m"\napi_key = "none"\nbase_url = "http://127.0.0.1:9/v1"\n'
               '[memory]\npath = ""\n')


def write(tmp_path: Path, tables: str = "", tools: str = TOOLS) -> Path:
    (tmp_path / "tools.py").write_text(tools)
    path = tmp_path / "dcbrain.toml"
    path.write_text('tools = ["tools.py"]\n' + OFFLINE_LLM + tables)
    return path


def tools_of(tmp_path: Path, tables: str = "") -> dict[str, Tool]:
    loaded = load_tools(load_config(write(tmp_path, tables), environ={}))
    return {name: item if isinstance(item, Tool) else Tool(item)
            for name, item in loaded.items()}


def test_a_tools_files_tool_objects_keep_their_names_and_options_once_each(
    tmp_path: Path,
) -> None:
    loaded = load_tools(load_config(write(tmp_path), environ={}))
    # The wrapped functions are their tools, not tools of their own as well.
    assert sorted(loaded) == ["delete_account", "lookup", "notify", "pay_back"]
    deleting, paying = loaded["delete_account"], loaded["pay_back"]
    assert isinstance(deleting, Tool) and isinstance(paying, Tool)
    assert deleting.requires_approval is True and deleting.timeout_s == 5.0
    assert paying.needs_approval({"amount": 500}) and not paying.needs_approval({"amount": 5})
    assert paying.retry is not None and paying.retry.retries == 2
    assert isinstance(loaded["notify"], Tool)
    assert callable(loaded["lookup"]) and not isinstance(loaded["lookup"], Tool)


def test_tool_tables_set_every_option_of_functions_and_tool_objects(tmp_path: Path) -> None:
    tools = tools_of(tmp_path, '''\
[tool.lookup]
requires_approval = true
approval_timeout_s = 60
timeout_s = 2.5
retries = 3
backoff = 0.25
reuse = false
side_effects = false
trusted_output = true
trusted_args = ["order_id"]
on_violation = "ask"
trusted_fields = ["id"]
[tool.delete_account]
approval_timeout_s = 3600
[tool.pay_back]
requires_approval = false
''')
    lookup = tools["lookup"]
    assert lookup.requires_approval is True and lookup.approval_timeout_s == 60.0
    assert (lookup.timeout_s, lookup.reuse, lookup.side_effects) == (2.5, False, False)
    assert lookup.trusted_output is True and lookup.trusted_args == frozenset({"order_id"})
    assert lookup.on_violation == "ask" and tools["notify"].on_violation is None
    assert lookup.trusted_fields == {"id"} and tools["notify"].trusted_fields == frozenset()
    assert lookup.retry is not None
    assert (lookup.retry.retries, lookup.retry.backoff) == (3, Backoff.fixed(0.25))
    # What a table leaves out, a Tool object keeps.
    deleting = tools["delete_account"]
    assert (deleting.requires_approval, deleting.timeout_s) == (True, 5.0)
    assert [policy.__name__ for policy in deleting.policies] == ["_only_own_accounts"]
    assert deleting.approval_timeout_s == 3600.0
    paying = tools["pay_back"]
    assert paying.requires_approval is False
    assert paying.retry is not None and paying.retry.retries == 2
    assert tools["notify"].requires_approval is False and tools["notify"].reuse is True


def test_a_tool_table_without_a_tool_is_a_config_error(tmp_path: Path,
                                                       run_cli: RunCLI) -> None:
    with pytest.raises(ConfigError) as caught:
        tools_of(tmp_path, "[tool.refund]\nrequires_approval = true\n")
    assert caught.value.problems == [
        "tool.refund: no tools file defines a tool 'refund' "
        "(tools: delete_account, pay_back, notify, lookup)"]
    done = run_cli("config", "check")
    assert done.returncode == 2
    assert "dcbrain.toml: tool.refund: no tools file defines a tool 'refund'" in done.stderr


@pytest.mark.parametrize(("table", "problem"), [
    ("requires_approval = true\nask_first = true\n",
     "tool.lookup.ask_first: Extra inputs are not permitted"),
    ('requires_approval = "maybe"\n',
     "tool.lookup.requires_approval: Input should be a valid boolean, unable to interpret "
     "input"),
    ("retries = -1\n", "tool.lookup.retries: Input should be greater than or equal to 0"),
    ("timeout_s = 0\n", "tool.lookup.timeout_s: Input should be greater than 0"),
    ('trusted_args = "order_id"\n', "tool.lookup.trusted_args: Input should be a valid list"),
    ('on_violation = "warn"\n', "tool.lookup.on_violation: Input should be 'deny' or 'ask'"),
])
def test_a_bad_tool_table_names_the_file_table_and_key(
    tmp_path: Path, table: str, problem: str
) -> None:
    path = write(tmp_path, "[tool.lookup]\n" + table)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert str(caught.value) == f"{path}: {problem}"


def test_two_tool_objects_of_one_name_in_a_file_are_refused(tmp_path: Path) -> None:
    tools = ("from dcbrain import Tool\n\n\ndef a(x: int) -> int:\n    return x\n\n\n"
             "def b(x: int) -> int:\n    return x\n\n\n"
             "first = Tool(a, name='same')\nsecond = Tool(b, name='same')\n")
    with pytest.raises(ConfigError) as caught:
        load_tools(load_config(write(tmp_path, tools=tools), environ={}))
    assert caught.value.problems == [
        "second: a second Tool named 'same'; give one of them another name"]


def test_chain_tables_set_approval(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '''\
[chains.send_email]
prompt = "Write to {{ to }}"
requires_approval = true
approval_timeout_s = 600
[chains.summarize]
prompt = "Summarize {{ text }}"
'''), environ={})
    chains = build_chains(config, {}, ScriptedLLM([]))
    assert chains["send_email"].requires_approval is True
    assert chains["send_email"].approval_timeout_s == 600.0
    assert chains["summarize"].requires_approval is False


def test_mcp_tables_name_the_tools_that_need_approval(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, str(CALC_SERVER)])
    config = load_config(write(tmp_path, f'[mcp.calc]\ncommand = {command}\n'
                                         'require_approval = ["shout-*", "greet"]\n'),
                         environ={})
    [server] = connect_mcp_servers(config)
    try:
        needs = {tool.name: tool.requires_approval for tool in server}
    finally:
        server.close()
    assert needs["shout_text"] is True and needs["greet"] is True
    assert needs["add"] is False


def test_an_mcp_require_approval_that_is_not_a_list_names_its_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[mcp.calc]\ncommand = ["x"]\nrequire_approval = "delete_*"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert str(caught.value) == f"{path}: mcp.calc.require_approval: Input should be a valid list"


def test_the_brain_a_config_builds_calls_the_configured_tools(tmp_path: Path) -> None:
    from dcbrain.config.composition import build_brain

    config = load_config(write(tmp_path, "[tool.lookup]\nrequires_approval = true\n"
                                         "[tool.notify]\nside_effects = false\n"
                                         "[brain]\napproval_timeout_s = 600\n"), environ={})
    brain = build_brain(config)
    assert brain.approval_timeout_s == 600.0
    tools = {tool.name: tool for tool in brain.tools}
    assert sorted(tools) == ["delete_account", "lookup", "notify", "pay_back"]
    assert tools["lookup"].requires_approval is True
    assert tools["delete_account"].requires_approval is True
    assert tools["notify"].side_effects is False
    assert tools["pay_back"].needs_approval({"amount": 101})


def test_the_brain_table_sets_the_policy_mode_and_what_the_planner_sees(
    tmp_path: Path,
) -> None:
    from dcbrain.config.composition import build_brain

    (tmp_path / "dcbrain.toml").write_text(
        '[brain]\npolicy_mode = "strict"\nshow_untrusted_to_planner = false\n'
        'on_violation = "ask"\n')
    brain = build_brain(load_config(tmp_path / "dcbrain.toml"))
    assert (brain.policy_mode, brain.show_untrusted_to_planner) == ("strict", False)
    assert brain.on_violation == "ask"
    (tmp_path / "dcbrain.toml").write_text('[brain]\non_violation = "maybe"\n')
    with pytest.raises(ConfigError, match="on_violation"):
        load_config(tmp_path / "dcbrain.toml")
    (tmp_path / "dcbrain.toml").write_text('[brain]\npolicy_mode = "sometimes"\n')
    with pytest.raises(ConfigError, match="policy_mode"):
        load_config(tmp_path / "dcbrain.toml")
