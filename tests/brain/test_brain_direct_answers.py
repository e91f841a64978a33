"""Direct answers: the answer as it is by default; judged, and replanned when rejected, with
``validate_direct_answers``."""

from __future__ import annotations

from pathlib import Path

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.config import build_brain, load_config
from support.brain_scripts import plan, verdict

REFUNDS: list[str] = []


def refund(order_id: str) -> str:
    """Refund an order."""
    REFUNDS.append(order_id)
    return f"refund R-{order_id} issued"


def test_a_rejected_direct_answer_is_planned_again_with_the_suggestion() -> None:
    REFUNDS.clear()
    plan_llm = ScriptedLLM(["Done, order A-1001 is refunded.",
                            plan("return refund(order_id='A-1001')")])
    validate_llm = ScriptedLLM([verdict(False, "nothing was refunded: call refund()"),
                                verdict(True)])
    brain = DCBrain(default_llm=plan_llm, default_validate_llm=validate_llm, tools=[refund],
                    validate_direct_answers=True)
    result = brain.run("refund order A-1001 please", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "validated", "refund R-A-1001 issued")
    assert REFUNDS == ["A-1001"]
    assert result.suggestions == ["nothing was refunded: call refund()"]
    judged = validate_llm.calls[0][-1]["content"]
    assert "no plan: the assistant answered directly" in judged
    assert "Done, order A-1001 is refunded." in judged
    assert "nothing was refunded: call refund()" in plan_llm.calls[1][0]["content"]


def test_an_accepted_direct_answer_succeeds_as_a_validated_direct_answer() -> None:
    validate_llm = ScriptedLLM([verdict(True)])
    brain = DCBrain(default_llm=ScriptedLLM(["Paris."]), default_validate_llm=validate_llm,
                    validate_direct_answers=True)
    result = brain.run("Capital of France?", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "direct_answer", "Paris.")
    assert result.validated_by is not None and len(validate_llm.calls) == 1


def test_direct_answers_stay_unvalidated_by_default() -> None:
    validate_llm = ScriptedLLM([])
    brain = DCBrain(default_llm=ScriptedLLM(["Paris."]), default_validate_llm=validate_llm)
    result = brain.run("Capital of France?", conversation_id="c1")
    assert (result.status, result.reason, result.validated_by) == (
        "succeeded", "direct_answer", None)
    assert validate_llm.calls == []


def test_the_config_file_turns_direct_answer_validation_on(tmp_path: Path) -> None:
    path = tmp_path / "dcbrain.toml"
    path.write_text('[llm.main]\nmodel = "m"\napi_key = "none"\n'
                    'base_url = "http://127.0.0.1:9/v1"\n[memory]\npath = ""\n'
                    "[brain]\nvalidate_direct_answers = true\n")
    assert build_brain(load_config(path)).validate_direct_answers is True
    path.write_text(path.read_text().replace("validate_direct_answers = true\n", ""))
    assert build_brain(load_config(path)).validate_direct_answers is False
