"""``dcbrain.toml`` texts for tests: the fake LLM server as the main model."""

from __future__ import annotations

from pathlib import Path

from support.fake_openai import FakeOpenAIServer


def fake_llm_toml(server: FakeOpenAIServer, *, memory: str = "", extra: str = "") -> str:
    """``[llm.main]`` at ``server`` (key in ``FAKE_API_KEY``, no retries), ``[memory]`` at
    ``memory`` (``""``: in memory), then ``extra`` (more tables)."""
    return (
        "[llm.main]\n"
        f'base_url = "{server.base_url}"\n'
        'model = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\n'
        "max_retries = 0\n"
        "[memory]\n"
        f'path = "{memory}"\n'
        f"{extra}"
    )


def write_tools_config(directory: Path, server: FakeOpenAIServer, tools: str, *,
                       memory: str = "", extra: str = "") -> Path:
    """``tools.py`` of this text and a ``dcbrain.toml`` that loads it (see
    :func:`fake_llm_toml`) in ``directory``; the config's path."""
    (directory / "tools.py").write_text(tools)
    config = directory / "dcbrain.toml"
    config.write_text('tools = ["tools.py"]\n' + fake_llm_toml(server, memory=memory, extra=extra))
    return config
