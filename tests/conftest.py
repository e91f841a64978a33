"""Fixtures shared by the whole test suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.fake_openai import FakeOpenAIServer

# postgres_server / postgres_url: a private PostgreSQL cluster, for any test that asks
pytest_plugins = ["support.postgres_fixtures"]


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """An OpenAI-compatible server on 127.0.0.1 with scripted replies (support/fake_openai.py)."""
    with FakeOpenAIServer() as server:
        yield server
