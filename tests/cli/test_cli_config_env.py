"""``DCBRAIN_…`` variables set any key (over the file); ``dcbrain config show`` says where
each value came from and masks secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcbrain.config import ConfigError, find_config, load_config
from support.cli_runner import RunCLI

FILE = '''\
[llm.Main]
model = "file-model"
base_url = "http://ops:s3cret@127.0.0.1:9/v1"
api_key = "sk-from-file"
[mcp.notes]
command = ["python", "notes.py"]
env = { NOTES_TOKEN = "t-123", MODE = "read" }
[brain]
max_tokens = 64000
'''


def write(tmp_path: Path, text: str = FILE, name: str = "dcbrain.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_variables_set_nested_keys_over_the_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path), environ={
        "DCBRAIN_BRAIN__MAX_ITERATIONS": "5",
        "DCBRAIN_LLM__MAIN__MODEL": "env-model",  # reaches [llm.Main]: names match in any case
        "DCBRAIN_MCP__NOTES__COMMAND": '["python", "other.py"]',
        "DCBRAIN_MCP__NOTES__REQUIRE_APPROVAL": '["delete_*"]',
        "DCBRAIN_TOOL__LOOKUP__REQUIRES_APPROVAL": "true",
        "DCBRAIN_API_TOKEN": "not configuration",
        "OTHER_BRAIN__MAX_TOKENS": "1",
    })
    assert (config.brain.max_iterations, config.brain.max_tokens) == (5, 64_000)
    assert list(config.llm) == ["Main"] and config.llm["Main"].model == "env-model"
    assert config.mcp["notes"].command == ["python", "other.py"]
    assert config.mcp["notes"].env == {"NOTES_TOKEN": "t-123", "MODE": "read"}
    assert config.mcp["notes"].require_approval == ["delete_*"]
    assert config.tool["lookup"].requires_approval is True
    assert config.origins["llm.Main.model"] == "DCBRAIN_LLM__MAIN__MODEL"
    assert config.origins["brain.max_tokens"] == "file"


def test_without_a_file_the_variables_set_keys_over_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = find_config(environ={"DCBRAIN_MEMORY__PATH": "", "DCBRAIN_BRAIN__TIMEOUT": "30"})
    assert (config.memory.path, config.brain.timeout) == ("", 30.0)
    assert find_config(environ={}).memory.path == "dcbrain.db"


def test_a_bad_variable_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={"DCBRAIN_BRAIN__MAX_ITERATIONS": "many",
                                   "DCBRAIN_BRAIN__MAX_ITERATINS": "5"})
    assert caught.value.problems == [
        "brain.max_iterations: Input should be a valid integer, unable to parse string as "
        "an integer (from DCBRAIN_BRAIN__MAX_ITERATIONS)",
        "brain.max_iteratins: Extra inputs are not permitted (from DCBRAIN_BRAIN__MAX_ITERATINS)",
    ]


def test_config_show_says_where_each_value_came_from_with_secrets_masked(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write(tmp_path)
    done = run_cli("config", "show", "--json", env={
        "DCBRAIN_BRAIN__MAX_ITERATIONS": "5",
        "DCBRAIN_LLM__MAIN__API_KEY": "sk-from-env",
        "DCBRAIN_MCP__NOTES__URL": "https://bot:hunter2@notes.example/mcp?token=abc&team=x",
        "DCBRAIN_MCP__NOTES__COMMAND": "null",  # the url replaces it
    })
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    values = shown["values"]
    assert (shown["config_file"], shown["config_file_source"]) == (
        "dcbrain.toml", "default ./dcbrain.toml")
    assert values["brain.max_iterations"] == {
        "value": 5, "source": "environment DCBRAIN_BRAIN__MAX_ITERATIONS"}
    assert values["brain.max_tokens"] == {"value": 64000, "source": "file dcbrain.toml"}
    assert values["brain.timeout"] == {"value": 1200.0, "source": "default"}
    assert values["llm.Main.model"]["value"] == "file-model"
    assert values["llm.Main.api_key"] == {
        "value": "****", "source": "environment DCBRAIN_LLM__MAIN__API_KEY"}
    assert values["llm.Main.api_key_env"]["value"] == "OPENAI_API_KEY"  # a name, not a secret
    assert values["llm.Main.base_url"]["value"] == "http://ops:****@127.0.0.1:9/v1"
    assert values["mcp.notes.url"]["value"] == (
        "https://bot:****@notes.example/mcp?token=****&team=x")
    assert values["mcp.notes.env"] == {
        "value": {"NOTES_TOKEN": "****", "MODE": "read"}, "source": "file dcbrain.toml"}
    for secret in ("sk-from-env", "sk-from-file", "s3cret", "hunter2", "abc", "t-123"):
        assert secret not in done.stdout
    text = run_cli("config", "show", env={"DCBRAIN_BRAIN__MAX_ITERATIONS": "5"})
    assert text.returncode == 0, text.stderr
    assert "brain.max_iterations = 5  # environment DCBRAIN_BRAIN__MAX_ITERATIONS\n" \
        in text.stdout
    assert 'llm.Main.api_key = "****"  # file dcbrain.toml\n' in text.stdout


def test_the_config_flag_wins_over_dcbrain_config_which_wins_over_the_default(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write(tmp_path, "[brain]\nmax_iterations = 1\n")
    write(tmp_path, "[brain]\nmax_iterations = 2\n", "from-env.toml")
    write(tmp_path, "[brain]\nmax_iterations = 3\n", "from-flag.toml")
    env = {"DCBRAIN_CONFIG": "from-env.toml"}
    chosen = json.loads(run_cli("config", "show", "--json", env=env).stdout)
    assert chosen["config_file"] == "from-env.toml"
    assert chosen["config_file_source"] == "environment DCBRAIN_CONFIG"
    assert chosen["values"]["brain.max_iterations"]["value"] == 2
    flagged = json.loads(run_cli("config", "show", "--json", "--config", "from-flag.toml",
                                 env=env).stdout)
    assert flagged["config_file_source"] == "flag --config"
    assert flagged["values"]["brain.max_iterations"]["value"] == 3
    # The environment's keys still win over the file the flag chose.
    over = json.loads(run_cli("config", "show", "--json", "--config", "from-flag.toml",
                              env={**env, "DCBRAIN_BRAIN__MAX_ITERATIONS": "4"}).stdout)
    assert over["values"]["brain.max_iterations"]["value"] == 4


def test_every_command_builds_from_the_environments_keys(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    (tmp_path / "tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    (tmp_path / "plan.tf").write_text("print(add(a=2, b=3))\n")
    write(tmp_path, '[memory]\npath = ""\n')
    assert run_cli("plan", "run", "plan.tf").returncode != 0  # the file declares no tools
    done = run_cli("plan", "run", "plan.tf", env={"DCBRAIN_TOOLS": '["tools.py"]'})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "5\n"
    bad = run_cli("config", "check", env={"DCBRAIN_TOOLS": "tools.py"})
    assert bad.returncode == 2
    assert "dcbrain.toml: tools: not valid JSON (from DCBRAIN_TOOLS)" in bad.stderr
