"""execute_run: the one run loop of every surface — timeout, supersede, abort, final event."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dcbrain import Chain, DCBrain, ScriptedLLM
from dcbrain.brain import BrainRun, RunDeps
from dcbrain.events import Event, Final
from dcbrain.exceptions import TFBrainError
from dcbrain.neural import Neural
from dcbrain.runs import RunRequest, SupersedePolicy, execute_run
from support.brain_scripts import plan, verdict
from support.server_app import PATIENCE_S, Gate


class Collected:
    """A sink keeping every event it gets, as the surfaces' sinks do, from any thread."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    @property
    def final(self) -> Final:
        last = self.events[-1].payload
        assert isinstance(last, Final)
        return last


def slow_brain(**options: Any) -> tuple[DCBrain, RunDeps]:
    """Every plan takes an hour on the run's clock; the budget is a minute."""
    now = [100.0]

    def slow_tool() -> int:
        """Takes an hour on the run's clock."""
        now[0] += 3600
        return 1

    brain = DCBrain(default_llm=ScriptedLLM([plan("return slow_tool()")] * 3),
                    default_validate_llm=ScriptedLLM([verdict(False, "again")] * 3),
                    tools=[slow_tool], timeout=60, **options)
    return brain, RunDeps(clock=lambda: now[0])


def test_a_timeout_is_an_outcome_with_the_partial_result() -> None:
    brain, deps = slow_brain()
    sink = Collected()
    outcome = asyncio.run(execute_run(brain, RunRequest("r1", "c1", "q"), deps, sink))
    assert (outcome.status, outcome.reason) == ("failed", "timeout")
    assert outcome.result is not None and outcome.result.iterations == 1
    assert (sink.final.status, sink.final.reason) == ("failed", "timeout")
    assert [e.seq for e in sink.events] == list(range(len(sink.events)))


def test_run_raises_a_timeout_as_the_product_promises_unless_told_not_to() -> None:
    brain, deps = slow_brain()
    with pytest.raises(TFBrainError) as raised:
        asyncio.run(brain.async_run("q", "c1", deps=deps))
    assert raised.value.result.reason == "timeout"
    quiet, deps = slow_brain(raise_on_timeout=False)
    result = asyncio.run(quiet.async_run("q", "c1", deps=deps))
    assert (result.status, result.reason) == ("failed", "timeout")


def holding_brain(gate: Gate) -> DCBrain:
    """A plan that calls ``hold()`` and then a chain (a new-input safe point)."""
    summarize = Chain(name="summarize", description="Summarize a text",
                      llm=ScriptedLLM(["a summary"]), prompt="Summarize: {{ text }}")
    planner = ScriptedLLM([plan("h = hold()\nreturn summarize(text=h)"), verdict(True)])
    return DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                   tools=[gate.hold])


@pytest.mark.parametrize("grace_s", [PATIENCE_S, 0.0])
def test_a_superseded_run_ends_superseded_and_names_its_successor(grace_s: float) -> None:
    """By new input at the next safe point (a long grace) or by an abort (no grace)."""
    gate = Gate()
    mailbox = Neural()
    request = RunRequest("old", "c1", "first question")
    sink = Collected()

    async def scenario() -> Any:
        task = asyncio.create_task(execute_run(holding_brain(gate), request,
                                               RunDeps(mailbox=mailbox), sink))
        await asyncio.to_thread(gate.entered.wait, PATIENCE_S)
        SupersedePolicy(grace_s).apply(request, "new", "second question", mailbox)
        gate.opened.set()
        return await asyncio.wait_for(task, PATIENCE_S)

    outcome = asyncio.run(scenario())
    assert (outcome.status, outcome.reason) == ("aborted", "superseded")
    assert (sink.final.status, sink.final.reason, sink.final.superseded_by) == (
        "aborted", "superseded", "new")
    assert [e.seq for e in sink.events] == list(range(len(sink.events)))
    assert mailbox.pending_user_input("c1") is None  # taken: it was for this run


def test_new_input_nobody_superseded_with_ends_new_input() -> None:
    gate = Gate()
    mailbox = Neural()
    sink = Collected()

    async def scenario() -> Any:
        task = asyncio.create_task(execute_run(holding_brain(gate), RunRequest("r", "c1", "q"),
                                               RunDeps(mailbox=mailbox), sink))
        await asyncio.to_thread(gate.entered.wait, PATIENCE_S)
        mailbox.post_user_input("c1", "actually, something else")
        gate.opened.set()
        return await asyncio.wait_for(task, PATIENCE_S)

    outcome = asyncio.run(scenario())
    assert (outcome.status, outcome.reason) == ("aborted", "new_input")
    assert (sink.final.reason, sink.final.superseded_by) == ("new_input", None)


def test_an_abort_before_the_run_exists_ends_it_without_running() -> None:
    request = RunRequest("r", "c1", "q")
    request.abort()
    brain = DCBrain(default_llm=ScriptedLLM([]))  # nothing may be asked
    sink = Collected()
    outcome = asyncio.run(execute_run(brain, request, RunDeps(), sink))
    assert (outcome.status, outcome.reason) == ("aborted", "aborted")
    assert [e.seq for e in sink.events] == [0] and sink.final.status == "aborted"



def test_an_abort_asked_while_the_run_starts_still_stops_it() -> None:
    gate = Gate()
    gate.opened.set()
    request = RunRequest("r", "c1", "q")
    brain = holding_brain(gate)

    class Racing:
        """Asks for the abort after the run exists but before it executes: the window
        in which the run itself cannot take one yet."""

        def __init__(self, brain: DCBrain) -> None:
            self.brain = brain

        def warm_up(self) -> None:
            self.brain.warm_up()

        @contextlib.asynccontextmanager
        async def start_run(self, question: str, conversation_id: str = "default", *,
                            run_id: str | None = None,
                            deps: RunDeps | None = None) -> AsyncIterator[BrainRun]:
            async with self.brain.start_run(question, conversation_id, run_id=run_id,
                                            deps=deps) as run:
                request.abort()
                assert not run.abort()  # the run alone would miss it
                yield run

    sink = Collected()
    outcome = asyncio.run(execute_run(Racing(brain), request, RunDeps(), sink))
    assert (outcome.status, outcome.reason) == ("aborted", "aborted")
    assert not gate.entered.is_set()  # stopped before its plan ran
    assert sink.final.status == "aborted"


def test_an_abort_asked_of_a_run_not_yet_executing_is_kept_for_it() -> None:
    gate = Gate()
    gate.opened.set()
    brain = holding_brain(gate)

    async def main() -> tuple[bool, Any]:
        async with brain.start_run("q", "c1") as run:
            asked = run.abort()  # not running yet: it says so, and keeps the request
            return asked, await run.execute()

    asked, result = asyncio.run(main())
    assert asked is False
    assert (result.status, result.reason) == ("aborted", "aborted")
    assert not gate.entered.is_set()  # stopped at its first step, before any plan
