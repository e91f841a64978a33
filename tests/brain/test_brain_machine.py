"""The lifecycle's moves: which trigger is allowed from which state."""

from __future__ import annotations

import logging

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import BrainRun, DCBrain
from dcbrain.brain.steps import STATES as STEP_STATES
from dcbrain.brain.steps import triggers_from
from dcbrain.exceptions import TFBrainError

STATES = ["init", "planning", "running", "waiting", "succeeded", "failed", "aborted"]


def idle_brain() -> DCBrain:
    return DCBrain(default_llm=ScriptedLLM([]))


def idle_run() -> BrainRun:
    """A run that was made but not executed: its machine can be driven by hand."""
    return BrainRun(idle_brain(), "q")


def test_the_table_reads_like_the_seed_diagram() -> None:
    run = idle_run()
    assert list(STEP_STATES) == STATES == DCBrain.states == BrainRun.states
    assert run.state == "init"
    assert triggers_from("init") == {"init", "plan", "abort"}
    assert triggers_from("planning") == {"init", "plan", "exec_plan", "succeed", "fail", "abort"}
    assert triggers_from("running") == {"init", "plan", "succeed", "fail", "wait", "abort"}
    assert triggers_from("waiting") == {"init", "resume", "abort"}
    for terminal in ("succeeded", "failed", "aborted"):
        assert triggers_from(terminal) == {"init", "abort"}


def moved(state: str, trigger: str) -> BrainRun:
    run = idle_run()
    run.state = state
    run.move(trigger)
    return run


@pytest.mark.parametrize("state", [s for s in STATES if s != "planning"])
def test_exec_plan_only_from_planning(state: str) -> None:
    with pytest.raises(TFBrainError, match="exec_plan"):
        moved(state, "exec_plan")
    assert moved("planning", "exec_plan").state == "running"


@pytest.mark.parametrize("state", ["succeeded", "failed", "aborted"])
def test_plan_is_not_allowed_from_a_terminal_state(state: str) -> None:
    with pytest.raises(TFBrainError, match="plan"):
        moved(state, "plan")


@pytest.mark.parametrize("state", ["init", "waiting", "succeeded", "failed", "aborted"])
def test_fail_only_from_planning_or_running(state: str) -> None:
    with pytest.raises(TFBrainError, match="fail"):
        moved(state, "fail")


@pytest.mark.parametrize("state", STATES)
def test_abort_from_any_state_including_terminal_ones(state: str) -> None:
    assert moved(state, "abort").state == "aborted"


@pytest.mark.parametrize("state", STATES)
def test_init_from_any_state_including_terminal_ones(state: str) -> None:
    assert moved(state, "init").state == "init"


def test_a_move_is_announced_as_the_seed_names_it() -> None:
    last = moved("planning", "exec_plan").recorder.as_dicts()[-1]
    assert (last["type"], last["source"], last["dest"], last["trigger"]) == (
        "state_changed", "planning", "running", "exec_plan")


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
