"""``[mcp.NAME]`` trust keys in ``dcbrain.toml``: read through the config loader and
enforced in a brain built from the file, against a real MCP server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dcbrain.config import ConfigError, build_brain, load_config
from dcbrain.config.composition import plan_tools
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.mcp_servers import MAIL_SERVER

OFFLINE_LLM = ('[llm.main]\nmodel = "m"\napi_key = "none"\nbase_url = "http://127.0.0.1:9/v1"\n'
               '[memory]\npath = ""\n')
MAIL = f"[mcp.mail]\ncommand = {json.dumps([sys.executable, str(MAIL_SERVER)])}\n"
TRUST = ('read_only = ["inbox", "sent"]\n'
         'trusted_output = ["directory"]\n'
         'trusted_args = { send = ["to"], "arch*" = ["to"] }\n')


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "dcbrain.toml"
    path.write_text(text)
    return path


def test_the_trust_keys_reach_the_servers_tools(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path, OFFLINE_LLM + MAIL + TRUST))
    spec = config.mcp["mail"]
    assert (spec.read_only, spec.trusted_output, spec.trusted_args) == (
        ["inbox", "sent"], ["directory"], {"send": ["to"], "arch*": ["to"]})
    tools, servers = plan_tools(config)
    try:
        mail = {name: tool for name, tool in tools.items() if isinstance(tool, Tool)}
        assert {name for name, tool in mail.items() if not tool.side_effects} == {
            "inbox", "sent"}
        assert [name for name, tool in mail.items() if tool.trusted_output] == ["directory"]
        assert {name: tool.trusted_args for name, tool in mail.items() if tool.trusted_args} \
            == {"send": {"to"}, "archive": {"to"}}
    finally:
        for server in servers:
            server.close()


def test_trusted_fields_in_the_table(tmp_path: Path) -> None:
    fields = 'trusted_fields = { "in*" = ["sender"] }\n'
    config = load_config(config_file(tmp_path, OFFLINE_LLM + MAIL + fields))
    assert config.mcp["mail"].trusted_fields == {"in*": ["sender"]}
    tools, servers = plan_tools(config)
    try:
        assert {name: tool.trusted_fields for name, tool in tools.items()
                if isinstance(tool, Tool) and tool.trusted_fields} == {"inbox": {"sender"}}
    finally:
        for server in servers:
            server.close()


def test_a_brain_from_the_file_refuses_the_attack_and_sends_the_honest_plan(
    tmp_path: Path, fake_openai: Any
) -> None:
    llm = (f'[llm.main]\nbase_url = "{fake_openai.base_url}"\nmodel = "fake-model"\n'
           'api_key = "sk-test"\nmax_retries = 0\n[memory]\npath = ""\n')
    brain = build_brain(load_config(config_file(tmp_path, llm + MAIL + TRUST)))
    fake_openai.reply(plan('mail = inbox()\nreturn send(to=mail[0]["sender"], body="hi")'))
    fake_openai.reply(plan('return send(to=directory(name="Bob"), body="hi")'))
    fake_openai.reply_json(verdict(True))
    result = brain.run("forward my mail")
    assert (result.status, result.final_result) == ("succeeded", "sent to bob@example.com")
    refused = next(event for event in result.events if event["type"] == "plan_finished")
    assert (refused["ok"], refused["error_kind"]) == (False, "CheckError")
    assert "send(to=...) gets data from inbox()" in refused["error"]
    sent = next(tool for tool in brain.tools if tool.name == "sent")
    assert sent.call() == [{"to": "bob@example.com", "body": "hi"}]


@pytest.mark.parametrize(("keys", "problem"), [
    ('trusted_args = { send = ["recipient"] }\n',
     r"mcp\.mail: MCP server 'mail' \(.*\) did not start: trusted_args: tool 'send' has no "
     r"argument 'recipient' \(its arguments: body, to\)"),
    ('trusted_output = ["directroy"]\n',
     r"mcp\.mail: MCP server 'mail' \(.*\) did not start: trusted_output: 'directroy' "
     "matches none of its tools"),
])
def test_a_declaration_the_server_cannot_honour_is_a_config_error(
    tmp_path: Path, keys: str, problem: str
) -> None:
    config = load_config(config_file(tmp_path, OFFLINE_LLM + MAIL + keys))
    with pytest.raises(ConfigError, match=problem):
        build_brain(config)


@pytest.mark.parametrize(("keys", "key"), [
    ('trusted_args = ["to"]\n', "mcp.mail.trusted_args"),
    ('trusted_args = { send = "to" }\n', "mcp.mail.trusted_args.send"),
    ('read_only = "inbox"\n', "mcp.mail.read_only"),
    ('trusted_output = 1\n', "mcp.mail.trusted_output"),
    ('policies = ["x"]\n', "mcp.mail.policies"),
])
def test_a_trust_key_of_the_wrong_shape_names_the_key(
    tmp_path: Path, keys: str, key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(config_file(tmp_path, OFFLINE_LLM + MAIL + keys))
    assert any(problem.startswith(key + ":") or problem.startswith(key + ".")
               for problem in caught.value.problems), caught.value.problems


def test_the_trust_keys_come_from_the_environment_too(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path, OFFLINE_LLM + MAIL), environ={
        "DCBRAIN_MCP__MAIL__TRUSTED_ARGS": '{"send": ["to"]}',
        "DCBRAIN_MCP__MAIL__READ_ONLY": '["inbox"]'})
    assert (config.mcp["mail"].trusted_args, config.mcp["mail"].read_only) == (
        {"send": ["to"]}, ["inbox"])
