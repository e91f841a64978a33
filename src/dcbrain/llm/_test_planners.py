"""Planners for tests: plans written by a function of the typed planning context.

A planner's input is the run's :class:`~dcbrain.brain.planning.PlanningContext` — the
question, which attempt this is, the earlier failed attempts, what plans looked up with
``replan_with``, the calls the run already made — not the prompt text, so a test's
planner knows it is replanning without reading the prompt (as pydantic-ai's
``FunctionModel`` gets structured messages). It calls no LLM and spends no tokens.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from dcbrain.llm.base import LLMReply

#: What a planner function returns: the reply text (a ```tf_plan block, or the answer).
PlannerFunction = Callable[[Any], str | Awaitable[str]]


def tf_plan(code: str) -> str:
    """``code`` as a planner's reply: one ```tf_plan block."""
    return f"```tf_plan\n{code}\n```"


class FunctionPlanner:
    """Writes each planning's reply with ``function(ctx)``, ``ctx`` the typed
    :class:`~dcbrain.brain.planning.PlanningContext` (``ctx.question``, ``ctx.attempt``,
    ``ctx.contextual_plan_info``, ``ctx.looked_up``, ``ctx.succeeded_calls``, ...).

    The function may be sync or async and returns the reply text: :func:`tf_plan` of the
    plan's code, or a direct answer. ``contexts`` keeps a copy of every context it got.
    ``DCBrain(planner=FunctionPlanner(...), default_validate_llm=...)``.
    """

    def __init__(self, function: PlannerFunction) -> None:
        self.function = function
        self.contexts: list[Any] = []

    async def plan(self, ctx: Any) -> LLMReply:
        """The reply to one planning."""
        snapshot = copy.copy(ctx)
        self.contexts.append(snapshot)
        value = self.function(snapshot)
        if inspect.isawaitable(value):
            value = await value
        if not isinstance(value, str):
            raise TypeError(f"a FunctionPlanner function must return the reply text (str), "
                            f"got {type(value).__name__}")
        return LLMReply(content=value, finish_reason="stop", model="function-planner")


class ScriptedPlanner(FunctionPlanner):
    """Replies with ``replies`` in order (each a reply text, or a function of the context
    for the replies that depend on it); a planning after the last raises ``IndexError``
    naming the attempt."""

    def __init__(self, replies: list[str | Callable[[Any], str]]) -> None:
        self.replies = list(replies)
        super().__init__(self._next)

    def _next(self, ctx: Any) -> str:
        index = len(self.contexts) - 1
        if index >= len(self.replies):
            raise IndexError(f"ScriptedPlanner has no reply for planning #{index + 1} "
                             f"({len(self.replies)} scripted)")
        reply = self.replies[index]
        return reply(ctx) if callable(reply) else reply
