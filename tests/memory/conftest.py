from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dcbrain.memory import SQLiteMemory


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db_path: Path) -> Iterator[SQLiteMemory]:
    store = SQLiteMemory(db_path)
    yield store
    store.close()
