from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dcbrain.memory import Memory, SQLiteMemory
from support.memory_backends import MemoryFactory


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture(params=["sqlite", "postgres"])
def make_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryFactory]:
    """Empty memories on SQLite (a file each) or PostgreSQL (a fresh database each)."""
    made: list[Memory] = []

    def make(**options: Any) -> Memory:
        if request.param == "sqlite":
            store: Memory = SQLiteMemory(tmp_path / f"memory-{len(made)}.db", **options)
        else:
            from dcbrain.durable.memory import PostgresMemory
            from dcbrain.durable.testing import fresh_database

            server = request.getfixturevalue("postgres_server")
            store = PostgresMemory(fresh_database(server), **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def memory(db_path: Path) -> Iterator[SQLiteMemory]:
    store = SQLiteMemory(db_path)
    yield store
    store.close()
