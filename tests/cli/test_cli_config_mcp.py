"""``dcbrain config check`` starts the MCP servers ``ask`` would start, so a server that
cannot start is a configuration error in both; ``dcbrain plan run --config`` calls them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dcbrain.config import load_config
from support.cli_runner import RunCLI
from support.mcp_servers import CALC_SERVER, calc_http_server

#: An LLM that is never called: these commands fail or succeed before any question.
OFFLINE_LLM = ('[llm.main]\nmodel = "m"\napi_key = "none"\nbase_url = "http://127.0.0.1:9/v1"\n'
               '[memory]\npath = ""\n')
CALC = f"command = {json.dumps([sys.executable, str(CALC_SERVER)])}\n"
#: A real command that exits at once, before it speaks MCP.
EXITS = f"command = {json.dumps([sys.executable, '-c', 'raise SystemExit(3)'])}\n"


def write_config(tmp_path: Path, servers: dict[str, str]) -> None:
    tables = "".join(f"[mcp.{name}]\n{body}" for name, body in servers.items())
    (tmp_path / "dcbrain.toml").write_text(OFFLINE_LLM + tables)


def test_config_check_starts_a_working_mcp_server_and_says_ok(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write_config(tmp_path, {"calc": CALC})
    done = run_cli("config", "check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dcbrain.toml: ok — ")
    assert "MCP servers: calc\n" in done.stdout


def test_config_check_reports_every_mcp_server_that_cannot_start_as_ask_does(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write_config(tmp_path, {
        "calc": CALC,
        "gone": 'command = ["dcbrain-test-no-such-program"]\n',
        "quits": EXITS + "startup_timeout = 10\n",
    })
    checked = run_cli("config", "check")
    asked = run_cli("ask", "q", "--json")
    assert checked.returncode == 2, checked.stdout
    assert checked.stdout == ""
    lines = checked.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == ["mcp.gone", "mcp.quits"], lines
    assert all(line.startswith("dcbrain.toml: mcp.") for line in lines)
    assert "Traceback" not in checked.stderr
    # ask refuses the same file, for the first server it meets
    assert asked.returncode == 2
    assert asked.stderr.splitlines()[0] == lines[0]


def test_config_check_skip_mcp_validates_without_starting_the_servers(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write_config(tmp_path, {"gone": 'command = ["dcbrain-test-no-such-program"]\n'})
    done = run_cli("config", "check", "--skip-mcp")
    assert done.returncode == 0, done.stderr
    assert "MCP servers: gone (not started)" in done.stdout


def test_config_check_reports_an_mcp_tool_clashing_with_a_local_tool(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    (tmp_path / "tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    write_config(tmp_path, {"calc": CALC})
    text = (tmp_path / "dcbrain.toml").read_text()
    (tmp_path / "dcbrain.toml").write_text('tools = ["tools.py"]\n' + text)
    done = run_cli("config", "check")
    assert done.returncode == 2
    assert done.stderr.startswith("dcbrain.toml: mcp.calc: tool 'add' clashes with local "
                                  "tool 'add'"), done.stderr


PLAN = 'total = calc_add(a=40, b=2)\nprint(total["total"])\nreturn calc_shout_text(text="done")\n'


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_plan_run_with_config_calls_the_configured_mcp_servers(
    tmp_path: Path, run_cli: RunCLI, transport: str
) -> None:
    (tmp_path / "plan.tf").write_text(PLAN)
    with calc_http_server() as url:
        server = CALC if transport == "stdio" else f'url = "{url}"\n'
        write_config(tmp_path, {"calc": server + 'prefix = "calc_"\n'})
        config = tmp_path / "dcbrain.toml"
        checked = run_cli("plan", "check", "plan.tf", "--config", str(config))
        done = run_cli("plan", "run", "plan.tf", "--config", str(config), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["stdout"] == "42\n"
    assert result["value"] == "DONE"


def test_plan_check_with_config_knows_the_mcp_tools_and_refuses_unknown_ones(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    (tmp_path / "plan.tf").write_text('return nothing_like_this(a=1)\n')
    write_config(tmp_path, {"calc": CALC})
    done = run_cli("plan", "check", "plan.tf", "--config", "dcbrain.toml")
    assert done.returncode == 1
    assert done.stdout.startswith("plan.tf:1:8: error: ")
    assert "nothing_like_this" in done.stdout


def test_plan_run_with_a_config_whose_mcp_server_cannot_start_exits_2(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    (tmp_path / "plan.tf").write_text("return 1\n")
    write_config(tmp_path, {"quits": EXITS})
    done = run_cli("plan", "run", "plan.tf", "--config", "dcbrain.toml")
    assert done.returncode == 2
    assert done.stderr.startswith("dcbrain.toml: mcp.quits: "), done.stderr


def test_the_old_output_schema_key_is_read_with_a_deprecation_warning(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    schema = '{ type = "object", properties = { s = { type = "string" } } }'
    path = tmp_path / "dcbrain.toml"
    path.write_text(f'{OFFLINE_LLM}[chains.summarize]\noutput_schema = {schema}\n')
    with pytest.warns(DeprecationWarning, match="chains.summarize.output_schema"):
        config = load_config(path)
    assert config.chains["summarize"].output_json_schema == {
        "type": "object", "properties": {"s": {"type": "string"}}}
    done = run_cli("config", "check")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("warning: dcbrain.toml: chains.summarize.output_schema is "
                           "deprecated: call it output_json_schema\n")
    path.write_text(f'{OFFLINE_LLM}[chains.summarize]\noutput_schema = {schema}\n'
                    f'output_json_schema = {schema}\n')
    both = run_cli("config", "check")
    assert both.returncode == 2
    assert both.stderr == ("dcbrain.toml: chains.summarize: both output_schema and "
                           "output_json_schema; keep output_json_schema\n")
