"""``dcbrain.toml`` texts for tests: the fake LLM server as the main model."""

from __future__ import annotations

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
