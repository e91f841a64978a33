"""Planners: who writes a run's plans from its typed :class:`PlanningContext`.

A :class:`Planner` gets everything the planning knows — the question, the chains and
tools, budgets, recall, earlier failed attempts, the run's finished calls — as one typed
:class:`~dcbrain.brain.planning.PlanningContext`, and replies with a ```tf_plan block (the
plan) or plain text (the direct answer). :class:`TemplatePlanner`, the default, renders
the planning template around the question and asks the plan LLM; the embedded model's
:class:`~dcbrain.brain.local_planner.LocalPlanner` builds its own short request from the
same context, so rewording the template never changes what the small model is told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dcbrain.chain import BasePrompt, Chain
from dcbrain.llm.base import ChatLLM, LLMReply
from dcbrain.usage import Usage

if TYPE_CHECKING:
    from dcbrain.brain.planning import PlanningContext


@dataclass
class PlanReply:
    """A planner's reply: ``content`` holds a ```tf_plan block or the direct answer;
    ``usage`` the tokens it cost (recorded in the run's journal)."""

    content: Any
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Planner(Protocol):
    """Writes the next plan (or the direct answer) of a run from its planning context.

    Called once per planning; LLM calls made through :meth:`ChatLLM.achat` inside count
    against the run's token budget and appear in its events.
    """

    async def plan(self, ctx: PlanningContext) -> PlanReply | LLMReply:
        """The reply to one planning of the run ``ctx`` describes (its ``content`` and
        ``usage``)."""
        ...


class TemplatePlanner:
    """The default planner: ``prompts`` (the planning template, the conversation, the
    knowledge, the question) rendered from the context and sent to ``llm``."""

    def __init__(self, llm: ChatLLM, prompts: Sequence[BasePrompt]) -> None:
        self.llm = llm
        self.prompts = list(prompts)
        self._made: tuple[ChatLLM, tuple[BasePrompt, ...], Chain] | None = None

    async def plan(self, ctx: PlanningContext) -> PlanReply:
        reply = await self.chain().async_run(ctx.message(), ctx.conversation, ctx.knowledge)
        return PlanReply(reply.content, reply.usage)

    def chain(self) -> Chain:
        """The plan chain of :attr:`llm` and :attr:`prompts`: made once, and again only
        when one of them is replaced (a chain keeps nothing of the runs it serves)."""
        made, prompts = self._made, tuple(self.prompts)
        if made is not None and made[0] is self.llm and len(made[1]) == len(prompts) \
                and all(a is b for a, b in zip(made[1], prompts, strict=True)):
            return made[2]
        chain = plan_chain(self.llm, prompts)
        self._made = (self.llm, prompts, chain)
        return chain


def plan_chain(llm: ChatLLM, prompts: Sequence[BasePrompt]) -> Chain:
    """A new plan chain on ``llm``: prompts cleared, then ``prompts`` in order."""
    chain = Chain(name="dcbrain_planner", llm=llm, prompt=None, description="writes tf_plan")
    chain.clear_prompts()
    chain.set_prompts(list(prompts))
    chain.catch_intermediate_chain_result = False
    return chain
