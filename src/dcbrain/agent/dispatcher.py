"""Runs one step through the tool registry and classifies what happened.

Every outcome is one of three kinds: ``success``; ``replannable`` (the tool raised,
its arguments did not validate, its result was not data); ``fatal`` (the tool raised
:class:`~dcbrain.exceptions.TFFatalStepError`). What the executor does with a
replannable failure is the step's :data:`FailurePolicy`.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from dcbrain.agent.step import GATHER, Step
from dcbrain.events import (
    CallRetry,
    EventLog,
    StepCallFinished,
    StepCallStarted,
    clip,
    clip_arguments,
)
from dcbrain.exceptions import TFFatalStepError, TFToolError
from dcbrain.retries import acall_with_retries, call_with_retries
from dcbrain.tools import Tool, ToolLike, ToolProvider

FailurePolicy = Literal["abort", "skip", "replan"]
"""``abort``: stop the session; ``skip``: mark the step failed and go on; ``replan``."""

OutcomeKind = Literal["success", "replannable", "fatal"]


@dataclass(frozen=True)
class StepOutcome:
    """What running a step produced: its kind, the result, or the error message."""

    kind: OutcomeKind
    result: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "success"


class Dispatcher:
    """A tool registry that executes steps: one call, or a gather step's calls at once.

    Sync tools run in a worker thread so that the calls of a gather step overlap;
    async tools run on the event loop. ``max_concurrency`` caps the calls of one
    gather step that are in flight together.
    """

    def __init__(
        self,
        tools: Mapping[str, ToolLike] | Sequence[ToolLike],
        *,
        failure_policy: FailurePolicy = "replan",
        tool_policies: Mapping[str, FailurePolicy] | None = None,
        max_concurrency: int = 4,
    ) -> None:
        self.tools = tool_registry(tools)
        policies = dict(tool_policies or {})
        for name, policy in [("<agent>", failure_policy), *policies.items()]:
            if policy not in get_args(FailurePolicy):
                raise ValueError(f"failure policy for {name}: {policy!r} is not abort/skip/replan")
        unknown = sorted(set(policies) - set(self.tools) - {GATHER})
        if unknown:
            raise ValueError(f"tool_policies name unknown tools: {', '.join(unknown)}")
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.failure_policy: FailurePolicy = failure_policy
        self.tool_policies: dict[str, FailurePolicy] = policies
        self.max_concurrency = max_concurrency

    def policy_for(self, step: Step) -> FailurePolicy:
        """The tool's own policy if it has one, else the agent's."""
        return self.tool_policies.get(step.tool_name, self.failure_policy)

    async def dispatch(self, step: Step, events: EventLog | None = None) -> StepOutcome:
        """Execute ``step`` and classify the outcome; never raises for a tool's failure."""
        if step.is_gather:
            return await self._gather(step, events)
        return await self._call(step.tool_name, step.args, f"step {step.id} ({step.tool_name})",
                                _RetryEvents(events, f"step-{step.revision}.{step.id}",
                                             step.tool_name))

    async def _call(self, name: str, args: dict[str, Any], where: str,
                    retries: _RetryEvents) -> StepOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return StepOutcome("replannable", error=f"{where}: unknown tool {name!r}")
        policy = tool.retry
        try:
            if tool.needs_approval(args):  # nobody to ask here: never run it unasked
                return StepOutcome("replannable", error=f"{where}: tool {name!r} requires a "
                                   "person's approval, which an agent's steps cannot ask for")
            if policy is None:
                result = await (tool.acall(**args) if tool.is_async
                                else asyncio.to_thread(tool.call, **args))
            elif tool.is_async:
                result = await acall_with_retries(policy, lambda: tool.acall(**args), retries,
                                                  never=(TFFatalStepError,))
            else:
                result = await asyncio.to_thread(call_with_retries, policy,
                                                 lambda: tool.call(**args), retries,
                                                 never=(TFFatalStepError,))
        except TFFatalStepError as exc:
            return StepOutcome("fatal", error=f"{where} failed fatally: {exc}")
        except TFToolError as exc:
            return StepOutcome("replannable", error=f"{where} failed: {exc}")
        except Exception as exc:  # any tool error is the planner's to handle
            return StepOutcome("replannable", error=f"{where} failed: {type(exc).__name__}: {exc}")
        return StepOutcome("success", result=result)

    async def _gather(self, step: Step, events: EventLog | None) -> StepOutcome:
        limit = asyncio.Semaphore(self.max_concurrency)
        calls = step.calls

        async def run(index: int, name: str, args: dict[str, Any]) -> StepOutcome:
            async with limit:
                call_id = f"step-{step.revision}.{step.id}.{index}"
                if events is not None:
                    events.emit(StepCallStarted(
                        call_id=call_id,
                        name=name,
                        step_id=step.id,
                        revision=step.revision,
                        index=index,
                        args=clip_arguments(args),
                    ))
                where = f"step {step.id} gather call {index} ({name})"
                started = time.perf_counter()
                outcome = await self._call(name, args, where, _RetryEvents(events, call_id, name))
                if events is not None:
                    events.emit(StepCallFinished(
                        call_id=call_id,
                        name=name,
                        status="ok" if outcome.ok else "error",
                        duration_s=time.perf_counter() - started,
                        step_id=step.id,
                        revision=step.revision,
                        index=index,
                        result=clip(outcome.result),
                        error=outcome.error,
                    ))
                return outcome

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run(i, name, args)) for i, (name, args) in enumerate(calls)]
        outcomes = [task.result() for task in tasks]
        results = [outcome.result for outcome in outcomes]
        errors = [outcome.error for outcome in outcomes if outcome.error]
        if any(outcome.kind == "fatal" for outcome in outcomes):
            return StepOutcome("fatal", result=results, error="; ".join(errors))
        if errors:
            return StepOutcome("replannable", result=results, error="; ".join(errors))
        return StepOutcome("success", result=results)


class _RetryEvents:
    """Announces the retried tries of one call of a step (the agent keeps no journal)."""

    def __init__(self, events: EventLog | None, call_id: str, name: str) -> None:
        self.events = events
        self.call_id = call_id
        self.name = name

    def retrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                 started: float) -> None:
        if self.events is not None:
            self.events.emit(CallRetry(
                call_id=self.call_id, kind="tool", name=self.name, attempt=attempt,
                attempts=attempts, error=f"{type(error).__name__}: {error}",
                delay_s=round(delay_s, 3)))

    async def aretrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                        started: float) -> None:
        self.retrying(attempt, attempts, error, delay_s, started)


def tool_registry(tools: Mapping[str, ToolLike] | Sequence[ToolLike]) -> dict[str, Tool]:
    """Tools by name: a dict's keys name its tools, a list's tools keep their names."""
    items = tools.items() if isinstance(tools, Mapping) else [(None, item) for item in tools]
    registry: dict[str, Tool] = {}
    for key, item in items:
        tool = _named(item, key)
        if tool.name == GATHER:
            raise ValueError(f"{GATHER!r} is reserved for gather steps; rename the tool")
        if tool.name in registry:
            raise ValueError(f"two tools are named {tool.name!r}")
        registry[tool.name] = tool
    return registry


def _named(item: ToolLike, name: str | None) -> Tool:
    if isinstance(item, ToolProvider) and not isinstance(item, Tool):
        item = item.as_tool()  # a chain: it runs as a tool
    if isinstance(item, Tool):
        if name is None or name == item.name:
            return item
        renamed = copy.copy(item)
        renamed.name = name
        return renamed
    return Tool(item, name=name)
