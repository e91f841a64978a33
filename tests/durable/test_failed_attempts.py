"""A conversation's failed attempts reach its next run on another worker, with --db too.

The workers here are two brains (as in two processes): the second knows of the first's
failure only through the durable store, which is where every worker keeps them.
"""

from __future__ import annotations

from typing import Any

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.brain.context import contextual_plan_info_key
from support.brain_scripts import plan, verdict
from support.durable_brains import CountingTools
from support.durable_harness import Backend, running_engine, submit, wait_until_ended

FAILED_PLAN = "return step_one(x=41)"


def test_the_next_run_of_a_conversation_sees_the_failure_of_the_last(
    backend: Backend, counting: CountingTools, postgres_url: str
) -> None:
    from dcbrain.durable import PostgresMemory

    memory: Any = PostgresMemory(postgres_url) if backend.name == "postgres" else None
    first = DCBrain(default_llm=ScriptedLLM([plan(FAILED_PLAN)]),
                    default_validate_llm=ScriptedLLM([verdict(False, "not 42")]),
                    tools=counting.tools(), memory=memory, max_iterations=1)
    second_planner = ScriptedLLM(["42, at last."])
    second = DCBrain(default_llm=second_planner, tools=counting.tools(), memory=memory)
    worker = [first]  # the brain of whichever worker takes the next run
    try:
        with running_engine(backend, lambda: worker[0]) as engine:
            failed = wait_until_ended(backend.store, submit(engine, backend.store, "c1", "q"))
            worker[0] = second
            assert failed.data["reason"] == "max_iterations", failed.data
            kept = backend.store.get_value(contextual_plan_info_key("c1"))
            assert [attempt["plan"] for attempt in kept] == [FAILED_PLAN]
            done = wait_until_ended(backend.store, submit(engine, backend.store, "c1", "q"))
            assert done.status == "succeeded", done.data
        told = "\n".join(str(message["content"]) for message in second_planner.calls[0])
        assert FAILED_PLAN in told
        assert backend.store.get_value(contextual_plan_info_key("c1")) is None  # solved
    finally:
        if memory is not None:
            memory.close()
