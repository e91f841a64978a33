"""A durable run on SQLite and on PostgreSQL: executed from the queue, recorded, in order."""

from __future__ import annotations

import time

from support.durable_brains import CountingTools
from support.durable_harness import Backend, running_engine, submit, wait_until_ended


def test_a_run_executes_from_the_queue_and_stores_every_event(
    backend: Backend, counting: CountingTools
) -> None:
    with running_engine(backend, counting.brain) as engine:
        run_id = submit(engine, backend.store, "c1", "count to three")
        record = wait_until_ended(backend.store, run_id)
        assert record.status == "succeeded", record.data
        assert record.data["result"]["final_result"] == 4
        events = backend.store.events(run_id)
        assert [e["seq"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "final" and events[-1]["status"] == "succeeded"
        assert {e["run_id"] for e in events} == {run_id}
        deadline = time.monotonic() + 10
        while engine.workflow_status(run_id) != "SUCCESS" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.workflow_status(run_id) == "SUCCESS"
    assert [counting.count(n, "finished") for n in ("step_one", "step_two", "step_three")] == [
        1, 1, 1]
