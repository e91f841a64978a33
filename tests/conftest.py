"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from support.fake_openai import FakeOpenAIServer

# postgres_server / postgres_url: a private PostgreSQL cluster, for any test that asks
pytest_plugins = ["support.postgres_fixtures"]

# `pytest --hypothesis-profile=long`: property tests (tests/security/test_noninterference.py)
# try many more examples than the normal run's
settings.register_profile("long", max_examples=3000, deadline=None)

#: The suite runs on one process per core (``-n auto`` in pyproject.toml), at most this
#: many: each process may start its own PostgreSQL cluster and sandbox workers.
MAX_TEST_PROCESSES = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(len(os.sched_getaffinity(0)), MAX_TEST_PROCESSES))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """An OpenAI-compatible server on 127.0.0.1 with scripted replies (support/fake_openai.py)."""
    with FakeOpenAIServer() as server:
        yield server
