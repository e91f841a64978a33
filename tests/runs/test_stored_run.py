"""One stored-run row for every store, and the typed run over it."""

from __future__ import annotations

import dcbrain.memory
from dcbrain.memory import SQLiteRunStore, StoredRun
from dcbrain.runs import RunRecord


def test_the_durable_keys_are_typed_properties_of_the_row() -> None:
    fresh = StoredRun("r1", "c1", "queued", {}, 1.0, 1.0)
    assert (fresh.executions, fresh.workflow_id, fresh.executor_id) == (0, "r1", None)
    resumed = StoredRun("r1", "c1", "running",
                        {"executions": 2, "workflow_id": "r1:2", "executor_id": "w-7"}, 1.0, 2.0)
    assert (resumed.executions, resumed.workflow_id, resumed.executor_id) == (2, "r1:2", "w-7")


def test_one_class_is_the_row_and_the_old_name_stays_importable() -> None:
    assert dcbrain.memory.RunRecord is StoredRun
    assert RunRecord is not StoredRun and RunRecord.__module__ == "dcbrain.runs.record"


def test_the_typed_run_keeps_its_worker_as_a_field_through_a_store() -> None:
    store = SQLiteRunStore(":memory:")
    record = RunRecord("r1", "c1", "what?", "succeeded", reason="validated",
                       executor_id="w-7", extra={"abort_requested": True})
    store.save_run(record.run_id, record.conversation_id, record.status, record.data())
    row = store.get_run("r1")
    assert row is not None and row.executor_id == "w-7"
    read = RunRecord.from_stored(row)
    assert (read.executor_id, read.extra) == ("w-7", {"abort_requested": True})
    assert read.summary()["executor_id"] == "w-7"
    assert "executor_id" not in RunRecord("r2", None, "q", "queued").data()
    store.close()
