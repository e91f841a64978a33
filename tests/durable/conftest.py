"""Fixtures for durable runs: a private PostgreSQL cluster, a fresh database per test.

The cluster is Debian's PostgreSQL (``initdb`` + ``pg_ctl``) in a temporary directory,
bound to 127.0.0.1 on a free port, with fsync off. As root it runs as the ``postgres``
user (PostgreSQL refuses root). Without the binaries (or without the ``durable`` extra)
the PostgreSQL tests are skipped on a developer machine but fail in CI (``CI=true``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools

if TYPE_CHECKING:
    from support.durable_harness import Backend

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false, except in CI where it is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def _has_durable_extra() -> bool:
    try:
        import dbos  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


if not IN_CI and not _has_durable_extra():
    # Outside CI, a machine without the extra skips these modules (they import it).
    collect_ignore_glob = ["test_*.py"]


def _durable_extra() -> None:
    require(_has_durable_extra(),
            'the durable extra is not installed: pip install -e ".[durable]"')


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a private PostgreSQL cluster's ``postgres`` database."""
    _durable_extra()
    from dcbrain.durable.testing import postgres_bindir, private_postgres

    bindir = postgres_bindir()
    require(bindir is not None, "PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    with private_postgres(bindir) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the private cluster (one per test)."""
    from dcbrain.durable.testing import fresh_database

    return fresh_database(postgres_server)


# -- backends and an engine in this process ------------------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    _durable_extra()
    from dcbrain.durable import DurableStore, PostgresDurableStore, SQLiteDurableStore
    from dcbrain.durable._urls import sqlite_url
    from support.durable_harness import Backend

    if request.param == "sqlite":
        memory = SQLiteMemory(tmp_path / "server.db")
        store: DurableStore = SQLiteDurableStore(memory, tmp_path / "journal.sqlite")
        yield Backend("sqlite", sqlite_url(tmp_path / "dbos.sqlite"), store)
        memory.close()
    else:
        url = request.getfixturevalue("postgres_url")
        store = PostgresDurableStore(url)
        yield Backend("postgres", url, store)
        store.close()


@pytest.fixture
def counting(tmp_path: Path) -> CountingTools:
    return CountingTools(tmp_path / "counters")


