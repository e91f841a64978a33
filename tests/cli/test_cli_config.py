"""``dcbrain init`` and ``dcbrain config check``; ``load_config`` names every bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import RunCLI
from dcbrain.config import ConfigError, load_config, load_tools

SCHEMA_LINE = ('output_schema = { type = "object", properties = { summary = { type = "string" } }, '
               'required = ["summary"] }')
VALID = f"""\
tools = ["tools.py"]
[llm.main]
provider = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "deepseek-chat"
api_key_env = "OPENAI_API_KEY"
[roles]
default = "main"
plan = "main"
validate = "main"
[chains.summarize]
description = "Summarize a text"
prompt = "Summarize: {{{{ text }}}}"
{SCHEMA_LINE}
llm = "main"
[memory]
path = "dcbrain.db"
[brain]
max_iterations = 10
max_tokens = 128000
timeout = 1200
"""


def config_errors(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "dcbrain.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value).splitlines()


def test_the_documented_config_loads(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    path = tmp_path / "dcbrain.toml"
    path.write_text(VALID, encoding="utf-8")
    config = load_config(path)
    assert config.llm["main"].model == "deepseek-chat"
    assert str(config.llm["main"].base_url) == "http://127.0.0.1:8000/v1"
    assert (config.role("plan"), config.role("validate")) == ("main", "main")
    assert config.chains["summarize"].output_schema == {
        "type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}
    assert config.resolve(config.memory.path) == tmp_path / "dcbrain.db"
    assert config.brain.max_tokens == 128_000
    assert list(load_tools(config)) == ["add"]


def test_roles_fall_back_to_default(tmp_path: Path) -> None:
    path = tmp_path / "dcbrain.toml"
    path.write_text('[llm.a]\nmodel = "x"\n[llm.b]\nmodel = "y"\n[roles]\ndefault = "a"\n'
                    'validate = "b"\n')
    config = load_config(path)
    assert (config.role("default"), config.role("plan"), config.role("validate")) == (
        "a", "a", "b")


def test_errors_name_the_key_path(tmp_path: Path) -> None:
    lines = config_errors(tmp_path, VALID.replace('"http://127.0.0.1:8000/v1"', '"not a url"'))
    assert lines == [f"{tmp_path / 'dcbrain.toml'}: llm.main.base_url: Input should be a valid "
                     "URL, relative URL without a base"]


def test_every_bad_key_is_reported(tmp_path: Path) -> None:
    text = '[llm.main]\nmodel = "m"\nbogus = 1\n[brain]\nmax_iterations = "ten"\n'
    lines = config_errors(tmp_path, text)
    keys = [line.split(": ")[1] for line in lines]
    assert keys == ["llm.main.bogus", "brain.max_iterations"]


def test_references_to_undeclared_llms_are_errors(tmp_path: Path) -> None:
    text = ('[llm.main]\nmodel = "m"\n[roles]\nplan = "big"\n'
            '[chains.c]\nprompt = "{{ x }}"\nllm = "small"\n')
    lines = config_errors(tmp_path, text)
    assert [line.split(": ")[1] for line in lines] == ["roles.plan", "chains.c.llm"]
    assert "unknown LLM 'big' (declared: main)" in lines[0]


def test_missing_tool_file_and_model_are_errors(tmp_path: Path) -> None:
    lines = config_errors(tmp_path, 'tools = ["missing.py"]\n[llm.main]\nprovider = "openai"\n')
    assert [line.split(": ")[1] for line in lines] == ["llm.main.model", "tools.0"]


def test_invalid_toml_is_reported_with_its_position(tmp_path: Path) -> None:
    lines = config_errors(tmp_path, "[llm.main\n")
    assert "invalid TOML" in lines[0]
    assert "line 1" in lines[0]


def test_config_check_command(tmp_path: Path, run_cli: RunCLI) -> None:
    (tmp_path / "tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    (tmp_path / "dcbrain.toml").write_text(VALID)
    done = run_cli("config", "check")
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout
    assert "add" in done.stdout
    (tmp_path / "bad.toml").write_text('[llm.main]\nmodel = "m"\nbase_url = "nope"\n')
    bad = run_cli("config", "check", "--config", "bad.toml")
    assert bad.returncode == 2
    assert bad.stderr.startswith("bad.toml: llm.main.base_url: Input should be a valid URL")


def test_init_writes_a_config_that_checks(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_cli("init")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "dcbrain.toml").read_text()
    assert "# " in text and "[roles]" in text and "[chains.summarize]" in text
    assert run_cli("config", "check").returncode == 0
    again = run_cli("init")
    assert again.returncode == 2
    assert "exists" in again.stderr
