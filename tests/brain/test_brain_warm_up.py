"""A brain loads what its first run needs before it: nothing of a run is used up."""

from __future__ import annotations

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from support.brain_scripts import plan, verdict


class _WarmingLLM(ScriptedLLM):
    warmed = 0

    def warm_up(self) -> None:
        self.warmed += 1


def test_warm_up_warms_each_llm_once_and_leaves_the_scripts_to_the_run() -> None:
    planner = _WarmingLLM([plan("return 6 * 7")])
    validator = _WarmingLLM([verdict(True)])
    brain = DCBrain(default_llm=planner, default_validate_llm=validator)
    brain.warm_up()
    brain.warm_up()
    assert (planner.warmed, validator.warmed) == (2, 2)
    result = brain.run("six times seven")
    assert (result.status, result.final_result) == ("succeeded", 42)


def test_one_llm_for_planning_and_validation_is_warmed_once_per_call() -> None:
    llm = _WarmingLLM([plan("return 1"), verdict(True)])
    brain = DCBrain(default_llm=llm, isolation="inprocess")
    brain.warm_up()
    assert llm.warmed == 1
    assert brain.run("one").final_result == 1
