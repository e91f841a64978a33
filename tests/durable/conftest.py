"""Fixtures for durable runs: a backend (SQLite, or PostgreSQL from
``support/postgres_fixtures.py``), counted tools."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools
from support.postgres_fixtures import IN_CI, has_durable_extra, require_durable_extra

if TYPE_CHECKING:
    from support.durable_harness import Backend
    from support.durable_processes import Cluster
    from support.fake_openai import FakeOpenAIServer

if not IN_CI and not has_durable_extra():
    # Outside CI, a machine without the extra skips these modules (they import it).
    collect_ignore_glob = ["test_*.py"]


# -- backends and an engine in this process ------------------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    require_durable_extra()
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




# -- real processes ------------------------------------------------------------------------

@pytest.fixture
def cluster(tmp_path: Path, fake_openai: FakeOpenAIServer) -> Iterator[Callable[..., Cluster]]:
    """``cluster(delay_s=..., approval=(...))``: this test's processes on one config of the
    counting tools (``support/durable_processes.py``), every one stopped at its end."""
    from support.durable_processes import Cluster

    made: list[Cluster] = []

    def make(*, delay_s: float, approval: tuple[str, ...] = ()) -> Cluster:
        made.append(Cluster(tmp_path, fake_openai, delay_s=delay_s, approval=approval))
        return made[-1]

    yield make
    for each in made:
        each.close()
