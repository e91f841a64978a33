"""Fixtures for server tests: a store on disk, scripted brains, a live server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dcbrain import SQLiteMemory
from dcbrain.config.runtime import Runtime
from dcbrain.memory import Memory, RunStore
from dcbrain.server import ServerSettings, create_app
from support.server_app import Api, BrainScripts, ServeFn, served_api


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[SQLiteMemory]:
    store = SQLiteMemory(tmp_path / "server.db")
    yield store
    store.close()


@pytest.fixture
def brains(memory: SQLiteMemory) -> BrainScripts:
    return BrainScripts(memory)


@pytest.fixture
def serve(brains: BrainScripts, memory: SQLiteMemory) -> ServeFn:
    default_memory = memory
    """``with serve(**create_app_options) as api:`` a live server on loopback."""

    @contextmanager
    def start(*, token: str | None = None, store: RunStore | None = None,
              memory: Memory | None = None, **options: Any) -> Iterator[Api]:
        runtime = Runtime(store=store or default_memory, memory=memory, brains=brains)
        app = create_app(runtime, ServerSettings(api_token=token, **options))
        with served_api(app, token) as api:
            yield api

    return start
