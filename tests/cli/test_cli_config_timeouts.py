"""``timeout_s`` of chains and MCP servers in ``dcbrain.toml``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcbrain.config import ConfigError, build_chains, load_config
from dcbrain.llm.testing import ScriptedLLM

CONFIG = """\
[chains.summarize]
prompt = "Summarize: {{ text }}"
timeout_s = 12.5
[mcp.notes]
command = ["notes-server"]
timeout_s = 30
tool_timeout_s = { search = 5 }
"""


def test_chain_and_mcp_timeouts_are_read(tmp_path: Path) -> None:
    path = tmp_path / "dcbrain.toml"
    path.write_text(CONFIG)
    config = load_config(path)
    notes = config.mcp["notes"]
    assert (notes.timeout_s, notes.tool_timeout_s) == (30, {"search": 5})
    llm = ScriptedLLM([])
    chains = build_chains(config, {}, llm)
    assert chains["summarize"].timeout_s == 12.5


def test_a_timeout_that_is_not_positive_names_its_key(tmp_path: Path) -> None:
    path = tmp_path / "dcbrain.toml"
    path.write_text(CONFIG.replace("timeout_s = 12.5", "timeout_s = 0"))
    with pytest.raises(ConfigError, match=r"chains\.summarize\.timeout_s"):
        load_config(path)
