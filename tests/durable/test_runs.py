"""A durable run on SQLite and on PostgreSQL: executed from the queue, recorded, in order."""

from __future__ import annotations

import time
from typing import Any

from dcbrain import FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.durable.loop import RunLoop
from support.brain_scripts import plan, verdict
from support.durable_brains import THREE_STEPS, CountingTools
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


def _tasks_left(runs: RunLoop) -> int:
    deadline = time.monotonic() + 5
    while (left := runs.in_flight()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _workflow_status(engine: object, run_id: str, wanted: str) -> str | None:
    deadline = time.monotonic() + 10
    status = None
    while time.monotonic() < deadline:
        status = engine.workflow_status(run_id)  # type: ignore[attr-defined]
        if status == wanted:
            break
        time.sleep(0.05)
    return status


def test_a_base_exception_inside_a_run_fails_it_instead_of_leaving_it_pending(
    backend: Backend, counting: CountingTools
) -> None:
    def exiting_tool() -> int:
        """Exit the process (a BaseException)."""
        raise SystemExit(3)

    def planner(messages: list[dict[str, Any]]) -> str:  # by the question asked
        asked = str(messages[-1]["content"])
        return plan("return exiting_tool()" if "exit" in asked else THREE_STEPS)

    def brain() -> DCBrain:
        return DCBrain(default_llm=FunctionLLM(planner),
                       default_validate_llm=ScriptedLLM([verdict(True)]),
                       tools=[exiting_tool, *counting.tools()])

    counting.delay_s = 0.3
    with running_engine(backend, brain) as engine:
        run_id = submit(engine, backend.store, "c1", "exit")
        other = submit(engine, backend.store, "c2", "count to three")
        record = wait_until_ended(backend.store, run_id)
        assert record.status == "failed"
        assert "SystemExit" in record.data["error"]
        assert backend.store.events(run_id)[-1]["type"] == "final"
        assert _workflow_status(engine, run_id, "ERROR") == "ERROR"
        # Every run of the worker is on one loop: the other one went on and succeeded.
        assert wait_until_ended(backend.store, other).status == "succeeded"
        assert _tasks_left(engine.executor.runs) == 0  # nothing of either run lingers


def test_runs_of_one_conversation_execute_one_after_the_other(
    backend: Backend, counting: CountingTools
) -> None:
    counting.delay_s = 0.3
    with running_engine(backend, counting.brain) as engine:
        first = submit(engine, backend.store, "same", "one")
        second = submit(engine, backend.store, "same", "two")
        other = submit(engine, backend.store, "other", "three")
        records = {run_id: wait_until_ended(backend.store, run_id)
                   for run_id in (first, second, other)}
    assert {r.status for r in records.values()} == {"succeeded"}
    events = {run_id: backend.store.events(run_id) for run_id in (first, second, other)}
    spans = {run_id: (e[0]["ts"], e[-1]["ts"]) for run_id, e in events.items()}
    (_, a_end), (b_start, b_end) = sorted([spans[first], spans[second]])
    assert b_start >= a_end  # one at a time per conversation, never overlapping
    assert spans[other][0] < max(a_end, b_end)  # other conversations do not wait


def test_a_worker_warms_one_brain_up_and_its_runs_still_get_every_reply(
    backend: Backend, counting: CountingTools
) -> None:
    warmed: list[str] = []

    class WarmingLLM(ScriptedLLM):
        def warm_up(self) -> None:
            warmed.append("llm")

    def brain() -> DCBrain:
        return DCBrain(default_llm=WarmingLLM([plan("return step_one(x=1)")]),
                       default_validate_llm=ScriptedLLM([verdict(True)]),
                       tools=counting.tools())

    with running_engine(backend, brain) as engine:
        engine.wait_warm(10)
        assert warmed == ["llm"]  # one brain, built for the warm-up only
        run_id = submit(engine, backend.store, "c1", "one")
        record = wait_until_ended(backend.store, run_id)
        assert record.status == "succeeded", record.data
        assert record.data["result"]["final_result"] == 2
