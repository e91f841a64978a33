"""The state machine's transition table: which trigger is allowed from which state."""

from __future__ import annotations

import logging

import pytest
from transitions import MachineError

from dcbrain import ScriptedLLM
from dcbrain.brain import BrainRun, DCBrain

STATES = ["init", "planning", "running", "waiting", "succeeded", "failed", "aborted"]


def idle_brain() -> DCBrain:
    return DCBrain(default_llm=ScriptedLLM([]))


def idle_run() -> BrainRun:
    """A run that was made but not executed: its machine can be driven by hand."""
    return BrainRun(idle_brain(), "q")


def test_the_table_reads_like_the_seed_diagram() -> None:
    run = idle_run()
    machine = run.machine
    assert list(machine.states) == STATES == DCBrain.states
    assert run.state == "init"
    assert set(machine.get_triggers("init")) == {"init", "plan", "abort"}
    assert set(machine.get_triggers("planning")) == {
        "init", "plan", "exec_plan", "succeed", "fail", "abort"
    }
    assert set(machine.get_triggers("running")) == {
        "init", "plan", "succeed", "fail", "wait", "abort"
    }
    assert set(machine.get_triggers("waiting")) == {"init", "resume", "abort"}
    for terminal in ("succeeded", "failed", "aborted"):
        assert set(machine.get_triggers(terminal)) == {"init", "abort"}


@pytest.mark.parametrize("state", [s for s in STATES if s != "planning"])
async def test_exec_plan_only_from_planning(state: str) -> None:
    brain = idle_run()
    brain.machine.set_state(state, model=brain)
    with pytest.raises(MachineError, match="exec_plan"):
        await brain.trigger("exec_plan")
    assert brain.state == state


@pytest.mark.parametrize("state", ["succeeded", "failed", "aborted"])
async def test_plan_is_not_allowed_from_a_terminal_state(state: str) -> None:
    brain = idle_run()
    brain.machine.set_state(state, model=brain)
    with pytest.raises(MachineError, match="plan"):
        await brain.trigger("plan")


@pytest.mark.parametrize("state", ["init", "waiting", "succeeded", "failed", "aborted"])
async def test_fail_only_from_planning_or_running(state: str) -> None:
    brain = idle_run()
    brain.machine.set_state(state, model=brain)
    with pytest.raises(MachineError, match="fail"):
        await brain.trigger("fail", reason="error")


@pytest.mark.parametrize("state", STATES)
async def test_abort_from_any_state_including_terminal_ones(state: str) -> None:
    brain = idle_run()
    brain.machine.set_state(state, model=brain)
    assert await brain.trigger("abort") is True
    assert brain.state == "aborted"


@pytest.mark.parametrize("state", STATES)
async def test_init_from_any_state_including_terminal_ones(state: str) -> None:
    brain = idle_run()
    brain.machine.set_state(state, model=brain)
    assert await brain.trigger("init") is True
    assert brain.state == "init"


async def test_plan_is_blocked_outside_a_run_and_the_trigger_says_so() -> None:
    brain = idle_run()
    assert await brain.trigger("plan") is False  # condition_plan: no run, no planning
    assert brain.state == "init"


def test_public_abort_without_a_run_is_a_no_op() -> None:
    brain = idle_brain()
    assert brain.abort() is False
    assert idle_run().abort() is False


def test_building_a_brain_logs_no_binding_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="transitions"):
        idle_run()
    assert not caplog.records


def test_a_finished_run_can_be_followed_by_another_one() -> None:
    llm = ScriptedLLM(["first answer", "second answer"])
    brain = DCBrain(default_llm=llm)
    first = brain.run("q1", conversation_id="c1")
    assert not brain.busy
    second = brain.run("q2", conversation_id="c1")
    assert (first.final_result, second.final_result) == ("first answer", "second answer")
    states = [e["dest"] for e in second.events if e["type"] == "state_changed"]
    assert states == ["init", "planning", "succeeded"]


def test_brain_needs_an_llm() -> None:
    with pytest.raises(ValueError, match="default_llm"):
        DCBrain()
    with pytest.raises(ValueError, match="max_iterations"):
        DCBrain(default_llm=ScriptedLLM([]), max_iterations=0)
