"""``dcbrain init`` and ``dcbrain config check``; ``load_config`` names every bad key."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dcbrain import ScriptedLLM
from dcbrain.config import ConfigError, build_chains, config_from_dict, load_config, load_tools
from dcbrain.retries import Backoff
from support.cli_runner import RunCLI
from support.mcp_servers import SCHEMA_SERVER

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


BROKEN_CHAINS = [
    ('prompt = "Summarize: {{ text "', "chains.summarize.prompt", "Jinja2 syntax error"),
    ('system_prompt = "{% if %}"', "chains.summarize.system_prompt", "Jinja2 syntax error"),
    ('output_schema = { type = "bogus" }', "chains.summarize.output_schema",
     "not a valid JSON Schema"),
    ('output_schema = { type = "object", properties = { a = { pattern = "(?=a)" } } }',
     "chains.summarize.output_schema", "refused at properties/a/pattern"),
]


@pytest.mark.parametrize(("line", "key", "message"), BROKEN_CHAINS)
def test_chains_that_cannot_be_built_are_config_errors(
    tmp_path: Path, line: str, key: str, message: str
) -> None:
    lines = config_errors(tmp_path, f'[llm.main]\nmodel = "m"\n[chains.summarize]\n{line}\n')
    assert len(lines) == 1
    assert lines[0].startswith(f"{tmp_path / 'dcbrain.toml'}: {key}: ")
    assert message in lines[0]


CLASHING_TOOLS = 'def summarize(text: str) -> str:\n    """Shorten."""\n    return text\n'


def _write_broken(tmp_path: Path, chain_line: str, *, clash: bool) -> None:
    tools = CLASHING_TOOLS if clash else CLASHING_TOOLS.replace("summarize", "shorten")
    (tmp_path / "tools.py").write_text(tools)
    (tmp_path / "dcbrain.toml").write_text(
        'tools = ["tools.py"]\n[llm.main]\nmodel = "m"\napi_key = "none"\n'
        'base_url = "http://127.0.0.1:9/v1"\n[chains.summarize]\n'
        f'{chain_line}\n[memory]\npath = ""\n'
    )


@pytest.mark.parametrize(
    ("line", "key"),
    [*((line, key) for line, key, _ in BROKEN_CHAINS),
     ('prompt = "Summarize: {{ text }}"', "chains.summarize")],
    ids=["prompt", "system_prompt", "output_schema", "output_pattern", "same_name_as_a_tool"],
)
def test_config_check_and_ask_report_bad_chains_the_same_way(
    tmp_path: Path, run_cli: RunCLI, line: str, key: str
) -> None:
    _write_broken(tmp_path, line, clash=key == "chains.summarize")
    checked = run_cli("config", "check")
    asked = run_cli("ask", "q", "--json")
    for done in (checked, asked):
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stderr.startswith(f"dcbrain.toml: {key}: "), done.stderr
        assert "Traceback" not in done.stderr
    assert checked.stdout == "" and asked.stdout == ""


def test_ask_reports_an_mcp_tool_with_an_invalid_schema_as_a_config_error(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "no-such-type"}}})
    (tmp_path / "dcbrain.toml").write_text(
        '[llm.main]\nmodel = "m"\napi_key = "none"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[memory]\npath = ""\n[mcp.bad]\n'
        f"command = {json.dumps([sys.executable, str(SCHEMA_SERVER), schema])}\n")
    asked = run_cli("ask", "q", "--json")
    assert asked.returncode == 2, (asked.stdout, asked.stderr)
    assert asked.stderr.startswith("dcbrain.toml: mcp.bad: MCP server 'bad' ("), asked.stderr
    assert ("did not start: tool 'lookup' input schema is not a valid JSON Schema at "
            "properties/a/type: ") in asked.stderr
    assert "Traceback" not in asked.stderr and asked.stdout == ""


def test_config_check_warns_about_an_unset_api_key_variable_and_ask_fails(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    (tmp_path / "dcbrain.toml").write_text(
        '[llm.main]\nmodel = "m"\napi_key_env = "DCBRAIN_TEST_UNSET_KEY"\n')
    checked = run_cli("config", "check")
    asked = run_cli("ask", "q", "--json")
    with_key = run_cli("config", "check", env={"DCBRAIN_TEST_UNSET_KEY": "sk-1"})
    problem = "llm.main.api_key_env: environment variable DCBRAIN_TEST_UNSET_KEY is not set"
    assert checked.returncode == 0 and "ok" in checked.stdout
    assert checked.stderr == f"warning: dcbrain.toml: {problem} (ask and serve need it)\n"
    assert asked.returncode == 2 and asked.stderr == f"dcbrain.toml: {problem}\n"
    assert with_key.returncode == 0 and with_key.stderr == ""


def test_a_local_llm_plans_with_the_grammar_and_examples_and_validates_by_schema(
    tmp_path: Path,
) -> None:
    from dcbrain.brain.local_planner import LocalPlanner
    from dcbrain.config import build_brain
    from dcbrain.llm.local import LocalLLM

    (tmp_path / "tools.py").write_text(
        'def lookup(city: str) -> str:\n    """The country of a city."""\n    return "PT"\n')
    (tmp_path / "weights.gguf").write_bytes(b"")  # never loaded: no call is made
    path = tmp_path / "dcbrain.toml"
    path.write_text(
        'tools = ["tools.py"]\n'
        '[llm.small]\nprovider = "local"\nmodel_path = "weights.gguf"\nthreads = 1\n'
        '[llm.remote]\nmodel = "m"\napi_key = "none"\n'
        '[roles]\ndefault = "remote"\nplan = "small"\nvalidate = "small"\n[memory]\npath = ""\n')
    brain = build_brain(load_config(path))
    planner, validator = brain.planner, brain.default_validate_llm
    assert isinstance(planner, LocalPlanner) and isinstance(validator, LocalLLM)
    sampler = planner.samplers[0]
    assert sampler.grammar is not None and '"lookup(" "city=" expr' in sampler.grammar
    assert any("lookup(city=" in example["content"] for example in sampler.examples)
    # The validator gets the verdict's JSON schema as its grammar: no plan grammar on it.
    assert validator.grammar is None
    assert validator.model_path == sampler.model_path
    assert brain.default_llm.model == "m"


def test_two_tool_files_defining_one_name_are_refused_naming_both(
        tmp_path: Path, run_cli: RunCLI) -> None:
    (tmp_path / "orders.py").write_text("def lookup(order_id: str) -> str:\n    return 'o'\n")
    (tmp_path / "crm.py").write_text("def lookup(name: str) -> str:\n    return 'c'\n")
    (tmp_path / "dcbrain.toml").write_text(
        'tools = ["orders.py", "crm.py"]\n[llm.main]\nmodel = "m"\napi_key = "none"\n'
        'base_url = "http://127.0.0.1:9/v1"\n')
    with pytest.raises(ConfigError) as caught:
        load_tools(load_config(tmp_path / "dcbrain.toml"))
    assert caught.value.problems == [
        "tools: 'lookup' is defined in orders.py and in crm.py; rename one of them"]
    done = run_cli("config", "check")
    assert done.returncode == 2
    assert "'lookup' is defined in orders.py and in crm.py" in done.stderr
    (tmp_path / "p.tf").write_text("lookup(order_id='A-1')\n")
    plan = run_cli("plan", "run", "p.tf", "--tools", "orders.py", "--tools", "crm.py")
    assert plan.returncode == 2
    assert "crm.py: function 'lookup' is also defined in orders.py" in plan.stderr


def test_the_config_sets_a_chains_retries_and_backoff(tmp_path: Path) -> None:
    config = config_from_dict({"chains": {
        "summarize": {"retries": 2, "backoff": 0.5}, "translate": {}}},
        base_dir=tmp_path, source="dcbrain.toml")
    chains = build_chains(config, {}, ScriptedLLM([]))
    policy = chains["summarize"].retry
    assert policy is not None and (policy.retries, policy.backoff) == (2, Backoff.fixed(0.5))
    assert chains["translate"].retry is None
