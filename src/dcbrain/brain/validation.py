"""Validation: the validator's verdict on a plan's result, and the answer it accepts.

A direct answer (the planner replied with text, no plan) is judged only when the brain
says ``validate_direct_answers``: the validator then sees that no plan ran. The verdict
is structured output (``VERDICT_SCHEMA``). A verdict that is not valid JSON
of that shape, even after the chain's repair and one retry, counts as *not solved* with
the parse error as the suggestion: a confused validator costs an iteration, never the run.
The validator sees the evidence too: the calls the plan made, with their results
(:func:`evidence`), so it can check the result against the data it rests on.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from dcbrain.brain.context import BrainIntermediateResult, describe_value
from dcbrain.brain.control import RunControl
from dcbrain.brain.templates import VERDICT_SCHEMA
from dcbrain.brain.trace import RunRecorder
from dcbrain.chain import AdditionalInfoPrompt, Chain
from dcbrain.events import Validation
from dcbrain.exceptions import TFChainError
from dcbrain.journal import CallJournal, JournalEntry, JournalKey
from dcbrain.llm.base import ChatLLM
from dcbrain.messages import TextMessage
from dcbrain.tfplan import CallRecord
from dcbrain.values.jsonsafe import dumps

#: Characters of the calls' results the validator is shown, in all and per call.
EVIDENCE_CHARS = 8000
EVIDENCE_RESULT_CHARS = 1500
#: What the validator is shown as the plan of a direct answer: nothing ran, no tool acted.
NO_PLAN = ("# no plan: the assistant answered directly, without running a plan or calling "
           "any chain or tool")


@dataclass(frozen=True)
class Verdict:
    """Whether the plan's result answers the question, and what to change if not."""

    is_solved: bool
    suggestion: str
    parse_error: str | None = None


async def validate(
    ir: BrainIntermediateResult,
    llm: ChatLLM,
    prompt: AdditionalInfoPrompt,
    control: RunControl,
    recorder: RunRecorder,
    journal: CallJournal | None = None,
    *,
    chain: Chain | None = None,
) -> bool:
    """Whether the validator accepts the current plan's result.

    Accepted, it becomes the final result; rejected, the suggestion is kept for the next
    planning. The verdict is recorded in ``journal``; a replayed run gets the recorded one.
    ``chain`` is :func:`validator_chain` of ``llm`` and ``prompt``, when the caller keeps
    one (made here otherwise).
    """
    key = JournalKey(ir.iterations, "", "__validator__", "", 0)
    entry = journal.lookup(key) if journal is not None else None
    validated_by = validator_name(llm)
    if entry is not None and entry.ok and isinstance(entry.result, dict):
        verdict = Verdict(bool(entry.result.get("is_solved")),
                          str(entry.result.get("suggestion") or ""),
                          entry.result.get("parse_error"))
    else:
        started = time.perf_counter()
        verdict = await ask_validator(ir, llm, prompt, control, chain=chain)
        if journal is not None:
            await journal.arecord(JournalEntry(key, "llm", True, result={
                "is_solved": verdict.is_solved, "suggestion": verdict.suggestion,
                "parse_error": verdict.parse_error,
            }, duration_s=time.perf_counter() - started))
    recorder.emit(Validation(iteration=ir.iterations, is_solved=verdict.is_solved,
                             suggestion=verdict.suggestion, parse_error=verdict.parse_error,
                             validated_by=validated_by))
    if verdict.is_solved:
        if not ir.direct_answer:
            ir.final_result = answer_of(ir)
        ir.validated_by = validated_by
        return True
    ir.suggestion = verdict.suggestion
    ir.suggestions.append(verdict.suggestion)
    return False


def _shown_as_verdict_schema(schema: dict[str, Any]) -> None:
    schema.clear()
    schema.update(copy.deepcopy(VERDICT_SCHEMA))


class VerdictReply(BaseModel):
    """The validator's structured output, validated as :data:`VERDICT_SCHEMA` states it
    (a JSON boolean, a JSON string) and shown to the validator as that schema."""

    model_config = ConfigDict(json_schema_extra=_shown_as_verdict_schema)

    is_solved: StrictBool
    suggestion: StrictStr = ""


def validator_chain(llm: ChatLLM, prompt: AdditionalInfoPrompt) -> Chain:
    """The validator's chain: ``prompt`` sent to ``llm``, the verdict as structured output.
    It keeps nothing of the verdicts it gives, so one serves every run of a brain."""
    return Chain(
        name="dcbrain_validator",
        llm=llm,
        prompt=[prompt],
        output_type=VerdictReply,
        catch_intermediate_chain_result=False,
    )


async def ask_validator(
    ir: BrainIntermediateResult, llm: ChatLLM, prompt: AdditionalInfoPrompt, control: RunControl,
    *, chain: Chain | None = None,
) -> Verdict:
    """The validator's verdict on the current plan and its result, or on the direct
    answer the planner gave instead of a plan."""
    if chain is None:
        chain = validator_chain(llm, prompt)
    if ir.direct_answer:
        judged = {"plan": NO_PLAN, "plan_result": describe_value(ir.final_result),
                  "plan_output": "", "evidence": ""}
    else:
        result = ir.current_result
        assert result is not None
        judged = {"plan": ir.current_plan or "", "plan_result": describe_value(result.value),
                  "plan_output": result.stdout[-4000:], "evidence": evidence(result.trace)}
    message = TextMessage(content=ir.context.current_input.content, additional_kwargs=judged)
    try:
        verdict = await control.interruptible("validate", chain.async_run(message))
    except TFChainError as exc:
        return Verdict(False, f"the validator's verdict could not be parsed: {exc}", str(exc))
    return parse_verdict(verdict.content)


def evidence(trace: Sequence[CallRecord], budget: int = EVIDENCE_CHARS) -> str:
    """The calls a plan made, one per line with its arguments and its result (or error),
    in the order they were made: what the plan's result rests on. Each result is cut to
    :data:`EVIDENCE_RESULT_CHARS` characters, the whole to ``budget``."""
    lines: list[str] = []
    used = 0
    for number, call in enumerate(trace, 1):
        arguments = ", ".join([*(dumps(value) for value in call.args),
                               *(f"{key}={dumps(value)}" for key, value in call.kwargs.items())])
        if call.error is not None:
            outcome = f"failed: {call.error}"
        else:
            outcome = call.result if isinstance(call.result, str) else dumps(call.result)
        if len(outcome) > EVIDENCE_RESULT_CHARS:
            outcome = outcome[:EVIDENCE_RESULT_CHARS] + \
                f"… ({len(outcome) - EVIDENCE_RESULT_CHARS} more characters)"
        line = f"{number}. line {call.line}: {call.name}({arguments[:400]}) -> {outcome}"
        if used + len(line) > budget:
            lines.append(f"({len(trace) - number + 1} more calls not shown)")
            break
        lines.append(line)
        used += len(line)
    return "\n".join(lines)


def validator_name(llm: ChatLLM) -> dict[str, Any]:
    """Who validates: ``{"model", "weak"}``; ``weak`` for a judge whose verdict is a
    formality (the embedded tiny model), not a check."""
    return {"model": str(getattr(llm, "model", "") or type(llm).__name__),
            "weak": bool(getattr(llm, "weak_judge", False))}


def parse_verdict(content: Any) -> Verdict:
    """The verdict in the validator's structured output; a malformed one is "not solved"."""
    if not isinstance(content, dict) or not isinstance(content.get("is_solved"), bool):
        error = f"the validator's verdict could not be parsed: {content!r}"
        return Verdict(False, error, error)
    suggestion = content.get("suggestion")
    return Verdict(content["is_solved"], suggestion if isinstance(suggestion, str) else "")


def answer_of(ir: BrainIntermediateResult) -> Any:
    """The final result of a validated plan: its value, else what it printed."""
    result = ir.current_result
    if result is None:
        return None
    if result.value is not None:
        return result.value
    return result.stdout.strip() or None
