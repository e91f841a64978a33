"""A private PostgreSQL cluster for the tests that need one, and a fresh database per test.

The cluster is Debian's PostgreSQL (``initdb`` + ``pg_ctl``) in a temporary directory,
bound to 127.0.0.1 on a free port, with fsync off; it starts the first time a test asks
for it. As root it runs as the ``postgres`` user (PostgreSQL refuses root). Without the
binaries (or without the ``durable`` extra) these tests are skipped on a developer
machine but fail in CI (``CI=true``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from dcbrain.durable.testing import PostgresCluster

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false, except in CI where it is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def has_durable_extra() -> bool:
    try:
        import dbos  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def require_durable_extra() -> None:
    require(has_durable_extra(),
            'the durable extra is not installed: pip install -e ".[durable]"')


def _postgres_bindir() -> Path:
    """PostgreSQL's programs (the test is skipped without them or the durable extra)."""
    require_durable_extra()
    from dcbrain.durable.testing import postgres_bindir

    bindir = postgres_bindir()
    require(bindir is not None, "PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    return bindir


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a private PostgreSQL cluster's ``postgres`` database."""
    from dcbrain.durable.testing import private_postgres

    with private_postgres(_postgres_bindir()) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the private cluster (one per test)."""
    from dcbrain.durable.testing import fresh_database

    return fresh_database(postgres_server)


@pytest.fixture
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A private cluster of this test's own, which the test may stop and start again."""
    from dcbrain.durable.testing import postgres_cluster

    with postgres_cluster(_postgres_bindir()) as cluster:
        yield cluster
