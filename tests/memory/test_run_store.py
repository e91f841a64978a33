"""Runs, run events and key/values live behind ``RunStore``, apart from ``Memory``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dcbrain.exceptions import TFMemoryError
from dcbrain.memory import (
    SCHEMA_VERSION,
    Memory,
    RunStore,
    SQLiteMemory,
    SQLiteRunStore,
)

MEMORY_METHODS = {
    "commit_message", "add_document", "add_knowledge", "messages", "recent", "search",
    "delete_conversation",
}
RUN_STORE_METHODS = {
    "save_run", "get_run", "append_run_event", "run_events", "list_runs", "put_value",
    "get_value", "delete_value", "page_runs", "finished_runs", "delete_runs",
}


@pytest.fixture(params=[SQLiteRunStore, SQLiteMemory])
def store(request: pytest.FixtureRequest, db_path: Path) -> Iterator[RunStore]:
    opened: RunStore = request.param(db_path)
    yield opened
    opened.close()


def test_a_memory_implements_only_what_planning_recalls() -> None:
    assert Memory.__abstractmethods__ == MEMORY_METHODS
    assert RunStore.__abstractmethods__ == RUN_STORE_METHODS
    assert not any(hasattr(Memory, name) for name in RUN_STORE_METHODS)


def test_the_run_store_alone_is_not_a_memory(db_path: Path) -> None:
    with SQLiteRunStore(db_path) as runs:
        assert not isinstance(runs, Memory)
        assert runs.schema_version() == SCHEMA_VERSION
    with SQLiteMemory(db_path) as memory:
        assert isinstance(memory, Memory) and isinstance(memory, RunStore)


def test_runs_and_their_events(store: RunStore) -> None:
    store.save_run("r1", "c1", "running", {"question": "q"})
    store.save_run("r2", "c2", "running", {})
    store.save_run("r1", "c1", "succeeded", {"question": "q", "answer": 42})

    run = store.get_run("r1")
    assert run is not None
    assert (run.status, run.data) == ("succeeded", {"question": "q", "answer": 42})
    assert run.updated_at >= run.created_at
    assert store.get_run("missing") is None
    assert [r.run_id for r in store.list_runs()] == ["r2", "r1"]
    assert [r.run_id for r in store.list_runs("c1")] == ["r1"]
    assert [r.run_id for r in store.list_runs(limit=1)] == ["r2"]

    for seq in range(3):
        store.append_run_event("r1", seq, {"type": "step", "n": seq})
    assert [e.event["n"] for e in store.run_events("r1")] == [0, 1, 2]
    assert [e.seq for e in store.run_events("r1", after_seq=0)] == [1, 2]
    assert store.run_events("r2") == []
    with pytest.raises(ValueError, match="already has an event with seq 1"):
        store.append_run_event("r1", 1, {"type": "duplicate"})


def test_key_values(store: RunStore) -> None:
    assert store.get_value("k", default="none") == "none"
    store.put_value("k", {"a": [1, 2]})
    store.put_value("k", {"a": [3]})
    assert store.get_value("k") == {"a": [3]}
    assert store.delete_value("k") is True
    assert store.delete_value("k") is False
    assert store.get_value("k") is None


async def test_async_twins(store: RunStore) -> None:
    await store.asave_run("r1", "c1", "running", {})
    await store.aappend_run_event("r1", 0, {"type": "x"})
    await store.aput_value("k", 1)
    assert (await store.aget_run("r1")) is not None
    assert len(await store.arun_events("r1")) == 1
    assert len(await store.alist_runs()) == 1
    assert await store.aget_value("k") == 1
    assert await store.adelete_value("k") is True
    await store.aclose()
    with pytest.raises(TFMemoryError, match="closed"):
        store.get_run("r1")


def test_both_stores_open_the_same_file(db_path: Path) -> None:
    with SQLiteRunStore(db_path) as runs:
        runs.save_run("r1", "c1", "succeeded", {"answer": 6})
        runs.put_value("k", "v")
    with SQLiteMemory(db_path) as memory:
        memory.commit_message("c1", "hello")
        assert [r.run_id for r in memory.list_runs("c1")] == ["r1"]
        assert memory.get_value("k") == "v"
    with SQLiteRunStore(db_path) as runs:
        assert runs.get_value("k") == "v"
