"""Planning: what the planner is told, the chain that asks it, and the plans it writes.

The planning context lives in ``current_input.additional_kwargs`` (what the planning
template renders). The plan chain is built fresh for every planning, so nothing one
planning set on a chain carries over to the next. A new plan is recorded on the run's
intermediate result and announced as ``plan_created`` (the run's first) or
``plan_revised`` (with the diff against the previous plan).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dcbrain.brain.base import answer_text
from dcbrain.brain.context import BrainContext, BrainIntermediateResult
from dcbrain.brain.control import RunControl
from dcbrain.brain.plan_diff import ScriptDiff, plan_calls
from dcbrain.brain.trace import RunRecorder
from dcbrain.chain import AdditionalInfoPrompt, BasePrompt, Chain
from dcbrain.events import EventType
from dcbrain.exceptions import TFChainError
from dcbrain.llm.base import ChatLLM
from dcbrain.tfplan import extract_plan

if TYPE_CHECKING:
    from dcbrain.memory import Recall


def as_prompt(
    prompt: str | AdditionalInfoPrompt | None, default: str, role: str
) -> AdditionalInfoPrompt:
    """``prompt`` as a prompt: ``None`` is the ``default`` template, a str a Jinja2 template."""
    if prompt is None:
        return AdditionalInfoPrompt(default, role=role)
    if isinstance(prompt, str):
        return AdditionalInfoPrompt(prompt, role=role)
    return prompt


def json_lines(items: list[dict[str, Any]]) -> str:
    """One JSON object per line: compact for the prompt, still readable."""
    if not items:
        return "(none)"
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items)


def write_planning_context(
    info: dict[str, Any], described: list[dict[str, Any]], *, max_iterations: int, max_tokens: int
) -> None:
    """Write the capability descriptions and the template's defaults into ``info``."""
    info["spec_chains"] = json_lines([item for item in described if item["kind"] == "chain"])
    info["tools"] = json_lines([item for item in described if item["kind"] != "chain"])
    info.update(
        contextual_plan_info=[],
        previous_suggestion="",
        memory_documents="",
        memory_keyword_hits="",
        max_iterations=max_iterations,
        max_tokens=max_tokens,
    )


def write_recall(context: BrainContext, recall: Recall) -> None:
    """Give the planning what memory recalled: conversation, knowledge, documents, hits."""
    context.recall = recall
    context.conversation = list(recall.conversation)
    context.knowledge = [item.text for item in recall.knowledge]
    info = context.current_input.additional_kwargs
    info["memory_documents"] = recall.documents_text()
    info["memory_keyword_hits"] = recall.keyword_text()


def plan_chain(llm: ChatLLM, prompts: Sequence[BasePrompt]) -> Chain:
    """A fresh plan chain on ``llm``: prompts cleared, then ``prompts`` in order."""
    chain = Chain(name="dcbrain_planner", llm=llm, prompt=None, description="writes tf_plan")
    chain.clear_prompts()
    chain.set_prompts(list(prompts))
    chain.catch_intermediate_chain_result = False
    return chain


async def ask_planner(
    ir: BrainIntermediateResult,
    llm: ChatLLM,
    prompts: Sequence[BasePrompt],
    control: RunControl,
    recorder: RunRecorder,
    callables: Iterable[str],
) -> None:
    """One planning: a fresh plan chain asked about the question, its reply taken."""
    context = ir.context
    chain = plan_chain(llm, prompts)
    reply = await control.interruptible(
        "plan", chain.async_run(context.current_input, context.conversation, context.knowledge)
    )
    take_reply(ir, reply.content, recorder, callables)


def take_reply(
    ir: BrainIntermediateResult, content: Any, recorder: RunRecorder, callables: Iterable[str]
) -> None:
    """A tf_plan block in the planner's reply is the plan, other text the direct answer."""
    text = content if isinstance(content, str) else answer_text(content)
    plan = extract_plan(text)
    if plan is not None and plan.strip():
        record_new_plan(ir, plan, recorder, callables)
    elif text.strip():
        ir.final_result = text.strip()
        ir.direct_answer = True
    else:
        ir.interpreter_err = TFChainError("the planner replied with nothing")


def record_new_plan(
    ir: BrainIntermediateResult, plan: str, recorder: RunRecorder, callables: Iterable[str]
) -> None:
    """Make ``plan`` the current plan and announce it, as created or as a revision."""
    previous = ir.plans[-1] if ir.plans else None
    ir.current_plan = plan
    ir.plans.append(plan)
    names = list(callables)
    if previous is None:
        recorder.emit(
            EventType.PLAN_CREATED,
            iteration=ir.iterations,
            revision=0,
            plan=plan,
            calls=[call.to_dict() for call in plan_calls(plan, names)],
        )
        return
    diff = ScriptDiff.compute(previous, plan, callables=names, revision=len(ir.plans) - 1)
    recorder.emit(
        EventType.PLAN_REVISED,
        iteration=ir.iterations,
        revision=diff.revision,
        plan=plan,
        previous_plan=previous,
        reason=ir.suggestion or (ir.last_error or ""),
        diff=diff.to_dict(),
        summary=diff.render(),
    )
