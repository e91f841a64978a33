"""The run store: writes a replay repeats are idempotent, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.durable_harness import Backend


def test_events_are_stored_once_per_seq_and_read_in_order(backend: Backend) -> None:
    store = backend.store
    first = [{"type": "a", "seq": 0}, {"type": "b", "seq": 1}]
    assert store.append_events("r1", first) == 2
    replayed = [{"type": "a", "seq": 0}, {"type": "changed", "seq": 1}, {"type": "c", "seq": 2}]
    assert store.append_events("r1", replayed) == 1  # only the new tail
    assert [e["type"] for e in store.events("r1")] == ["a", "b", "c"]
    assert [e["seq"] for e in store.events("r1", after=0)] == [1, 2]
    assert store.events_of_runs({"r1": 1, "none": -1}) == {"r1": [{"type": "c", "seq": 2}],
                                                            "none": []}


def test_journal_rows_keep_the_first_write_in_order(backend: Backend) -> None:
    store = backend.store
    assert store.record_journal("r1", "clock|0", {"value": 1.0})
    assert store.record_journal("r1", "call|x", {"result": 1})
    assert not store.record_journal("r1", "clock|0", {"value": 2.0})
    assert store.journal("r1") == [{"value": 1.0}, {"result": 1}]
    assert store.journal("r2") == []


def test_a_status_changes_only_from_the_expected_ones(backend: Backend) -> None:
    store = backend.store
    store.save_run("r1", "c1", "queued", {"question": "q"})
    assert store.update_run("r1", "aborted", {"reason": "aborted"}, only_from=("running",)) is None
    moved = store.update_run("r1", "running", {"executor_id": "w1"}, only_from=("queued",))
    assert moved is not None and moved.status == "running"
    assert moved.data == {"question": "q", "executor_id": "w1"}
    assert [r.run_id for r in store.list_runs("c1")] == ["r1"]


def test_closing_a_store_leaves_a_connection_in_use_to_its_user(postgres_url: str) -> None:
    from dcbrain.durable import PostgresDurableStore

    store = PostgresDurableStore(postgres_url)
    store.append_events("r1", [{"type": "a", "seq": 0}])  # one idle connection now
    with store._connection() as in_use:
        store.close()  # another thread closing the store meanwhile
        assert not in_use.closed
        assert in_use.execute("SELECT count(*) FROM dcbrain_run_events").fetchone() == (1,)
    assert in_use.closed  # closed once its user was done with it
    assert [e["type"] for e in store.events("r1")] == ["a"]  # later uses still work


def test_values_json_cannot_hold_are_stored_as_strings(backend: Backend) -> None:
    store = backend.store
    odd = {"type": "a", "seq": 0, "result": [float("nan"), 10**5000, {"\ud800": float("-inf")}]}
    assert store.append_events("r1", [odd]) == 1
    assert store.events("r1") == [
        {"type": "a", "seq": 0, "result": ["nan", hex(10**5000), {"\ufffd": "-inf"}]}]
    assert store.record_journal("r1", "call|x", {"result": float("inf")})
    assert store.journal("r1") == [{"result": "inf"}]


def _claim_every_run(path: str, runs: int, name: str, start: Any) -> list[str]:
    """In a process of its own: move each run queued → running; the ids it won."""
    from dcbrain.durable import SQLiteDurableStore
    from dcbrain.memory import SQLiteMemory

    store = SQLiteDurableStore(SQLiteMemory(path), path + "-journal.sqlite")
    start.wait()
    return [f"r{i}" for i in range(runs)
            if store.update_run(f"r{i}", "running", {"by": name}, only_from=("queued",))]


def test_two_processes_on_one_sqlite_file_never_both_win_a_status_change(
    tmp_path: Path
) -> None:
    import multiprocessing

    from dcbrain.durable import SQLiteDurableStore
    from dcbrain.memory import SQLiteMemory

    path = str(tmp_path / "brain.db")
    store = SQLiteDurableStore(SQLiteMemory(path), path + "-journal.sqlite")
    runs = 300
    for i in range(runs):
        store.save_run(f"r{i}", "c", "queued", {"question": "q"})
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(2) as pool:
            pending = [pool.apply_async(_claim_every_run, (path, runs, name, start))
                       for name in ("a", "b")]
            start.set()
            won = [result.get(timeout=120) for result in pending]
    assert sorted(won[0] + won[1]) == sorted(f"r{i}" for i in range(runs))  # each once
    assert all(store.get_run(f"r{i}").data["by"] == ("a" if f"r{i}" in won[0] else "b")
               for i in range(runs))


def test_an_sqlite_run_ends_with_its_final_event_in_one_transaction(tmp_path: Path) -> None:
    """Whoever reads a run's terminal status reads its ``final`` as the last event too:
    the event is not stored after the status (a reader polling for the end saw the
    ``state_changed`` before ``final`` as the run's last event)."""
    from dcbrain.durable import SQLiteDurableStore
    from dcbrain.memory import SQLiteMemory

    statuses_at_append: list[str] = []

    class Watched(SQLiteMemory):
        def append_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
            record = self.get_run(run_id)
            statuses_at_append.append(record.status if record is not None else "?")
            super().append_run_event(run_id, seq, event)

    path = str(tmp_path / "brain.db")
    runs = Watched(path)
    store = SQLiteDurableStore(runs, path + "-journal.sqlite")
    store.save_run("r1", "c", "running", {"question": "q"})
    store.append_events("r1", [{"type": "state_changed", "seq": 0, "dest": "done"}])
    ended = store.end_run("r1", "succeeded", {"reason": "done"},
                          [{"type": "final", "seq": 1, "status": "succeeded"}],
                          only_from=("running",))
    assert ended is not None and ended.status == "succeeded"
    assert [e["type"] for e in store.events("r1")] == ["state_changed", "final"]
    assert "succeeded" not in statuses_at_append  # never a terminal run without final
