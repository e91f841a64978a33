"""A durable run's plan as it is written: ``plan_delta`` events stored in order, on SQLite
and PostgreSQL."""

from __future__ import annotations

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.llm import StreamingScriptedLLM
from support.brain_scripts import add, plan, verdict
from support.durable_harness import Backend, running_engine, submit, wait_until_ended

PLAN = "a = add(a=1, b=2)\nreturn add(a=a, b=3)"


def streaming_brain() -> DCBrain:
    return DCBrain(default_llm=StreamingScriptedLLM([plan(PLAN)], tokens_per_second=200),
                   default_validate_llm=ScriptedLLM([verdict(True)]), tools=[add])


def test_a_durable_run_stores_its_plan_deltas_before_its_plan(backend: Backend) -> None:
    with running_engine(backend, streaming_brain) as engine:
        run_id = submit(engine, backend.store, "c1", "add them")
        record = wait_until_ended(backend.store, run_id)
    assert record.status == "succeeded", record.data
    events = backend.store.events(run_id)
    assert [e["seq"] for e in events] == list(range(len(events)))
    types = [e["type"] for e in events]
    deltas = [e for e in events if e["type"] == "plan_delta"]
    assert len(deltas) >= 2
    assert "".join(d["text"] for d in deltas) == plan(PLAN)
    assert max(i for i, kind in enumerate(types) if kind == "plan_delta") < types.index(
        "plan_created")
