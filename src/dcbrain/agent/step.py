"""Typed plan steps and the check that turns a planner's output into a valid plan.

A plan is an ordered list of :class:`Step`. A step calls one tool with keyword
arguments, or, as a *gather* step (``tool_name="gather"``), several tools concurrently.
``expected_outcome`` is the planner's one-line success condition: the executor does
not enforce it; replanners read it and events show it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dcbrain.agent.refs import reference_problems
from dcbrain.exceptions import TFPlanError, TFToolError
from dcbrain.tools import Tool

GATHER = "gather"
"""The reserved ``tool_name`` of a step whose ``args["calls"]`` run concurrently."""

StepStatus = Literal["pending", "succeeded", "failed", "cached"]


@dataclass
class Step:
    """One step of a plan: which tool to call, with what, and what should come of it.

    ``id`` increases within a plan revision. The executor fills ``result``, ``error``,
    ``status`` (``pending`` → ``succeeded`` / ``failed`` / ``cached``) and ``revision``
    (the plan revision the step belongs to: 0 for the first plan).
    """

    id: int
    tool_name: str
    args: dict[str, Any] = field(default_factory=dict)
    expected_outcome: str = ""
    result: Any = None
    error: str | None = None
    status: StepStatus = "pending"
    revision: int = 0

    @classmethod
    def gather(
        cls,
        id: int,
        calls: Sequence[tuple[str, Mapping[str, Any]] | Mapping[str, Any]],
        expected_outcome: str = "",
    ) -> Step:
        """A gather step; ``calls`` are ``(tool_name, args)`` pairs or call dicts."""
        normalized: list[dict[str, Any]] = []
        for call in calls:
            if isinstance(call, tuple):
                name, args = call
            else:
                name, args = call["tool_name"], call.get("args", {})
            normalized.append({"tool_name": name, "args": dict(args)})
        return cls(id, GATHER, {"calls": normalized}, expected_outcome)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """A step from :meth:`to_dict` output, or from ``{id, tool_name, args, ...}``."""
        return cls(
            id=data["id"],
            tool_name=data["tool_name"],
            args=data.get("args", {}),
            expected_outcome=data.get("expected_outcome") or "",
            result=data.get("result"),
            error=data.get("error"),
            status=data.get("status", "pending"),
            revision=data.get("revision", 0),
        )

    @property
    def is_gather(self) -> bool:
        return self.tool_name == GATHER

    @property
    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The ``(tool_name, args)`` calls of this step: one, or several for gather."""
        if self.is_gather:
            return [(call["tool_name"], call.get("args", {})) for call in self.args["calls"]]
        return [(self.tool_name, self.args)]

    def same_call(self, other: Step) -> bool:
        """True when both steps call the same tool with the same arguments."""
        return self.tool_name == other.tool_name and self.args == other.args

    def describe(self) -> str:
        """One line: ``[id] tool(arg=value, ...)``."""
        if self.is_gather:
            inner = ", ".join(_call_text(name, args) for name, args in self.calls)
            return f"[{self.id}] gather({inner})"
        return f"[{self.id}] {_call_text(self.tool_name, self.args)}"

    def pending_copy(self, revision: int) -> Step:
        """A fresh, pending deep copy of this step in plan revision ``revision``."""
        return Step(
            id=self.id,
            tool_name=self.tool_name,
            args=copy.deepcopy(self.args),
            expected_outcome=self.expected_outcome,
            revision=revision,
        )

    def snapshot(self) -> Step:
        """A deep copy, so callers cannot change the executor's record."""
        return copy.deepcopy(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool_name": self.tool_name,
            "args": copy.deepcopy(self.args),
            "expected_outcome": self.expected_outcome,
            "result": copy.deepcopy(self.result),
            "error": self.error,
            "status": self.status,
            "revision": self.revision,
        }


def _call_text(name: str, args: Mapping[str, Any]) -> str:
    rendered = ", ".join(f"{key}={value!r}" for key, value in args.items())
    return f"{name}({rendered})"


def validate_plan(plan: object, tools: Mapping[str, Tool], *, revision: int = 0) -> list[Step]:
    """Check a planner's output and return pending copies of its steps.

    Accepts a list (or tuple) of :class:`Step` or step dicts. Raises :class:`TFPlanError`
    naming the offending step: not a list, not a step, non-int or non-increasing id,
    unknown tool, args not a dict, arguments that do not fit the tool's signature, a
    malformed gather step, a malformed ``$ref`` or one to the step itself or a later
    step. All problems are reported at once.
    """
    if not isinstance(plan, list | tuple):
        raise TFPlanError(f"the plan must be a list of steps, got {type(plan).__name__}")
    problems: list[str] = []
    steps: list[Step] = []
    previous_id: int | None = None
    seen: set[int] = set()
    for index, item in enumerate(plan):
        where = f"step at index {index}"
        step = _as_step(item, where, problems)
        if step is None:
            continue
        if isinstance(step.id, bool) or not isinstance(step.id, int):
            problems.append(f"{where}: id must be an int, got {step.id!r}")
            continue
        where = f"step {step.id} (index {index})"
        if step.id in seen:
            problems.append(f"{where}: duplicate id {step.id}")
        elif previous_id is not None and step.id < previous_id:
            problems.append(f"{where}: ids must increase, {step.id} follows {previous_id}")
        seen.add(step.id)
        previous_id = step.id if previous_id is None else max(previous_id, step.id)
        if not isinstance(step.expected_outcome, str):
            problems.append(f"{where}: expected_outcome must be a str")
        problems.extend(f"{where}: {problem}" for problem in _step_problems(step, tools))
        if isinstance(step.args, dict):
            earlier = {earlier_step.id for earlier_step in steps}
            problems.extend(f"{where}: {problem}"
                            for problem in reference_problems(step.args, step.id, earlier))
        steps.append(step)
    if problems:
        raise TFPlanError("invalid plan: " + "; ".join(problems))
    return [step.pending_copy(revision) for step in steps]


def _as_step(item: object, where: str, problems: list[str]) -> Step | None:
    if isinstance(item, Step):
        return item
    if isinstance(item, Mapping):
        missing = [key for key in ("id", "tool_name") if key not in item]
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
            return None
        return Step.from_dict(item)
    problems.append(f"{where}: expected a Step or a dict, got {type(item).__name__}")
    return None


def _step_problems(step: Step, tools: Mapping[str, Tool]) -> list[str]:
    if not isinstance(step.tool_name, str):
        return [f"tool_name must be a str, got {step.tool_name!r}"]
    if not isinstance(step.args, dict):
        return [f"args must be a dict, got {type(step.args).__name__}"]
    if not step.is_gather:
        return _call_problems(step.tool_name, step.args, tools)
    calls = step.args.get("calls")
    if set(step.args) != {"calls"} or not isinstance(calls, list) or not calls:
        return ['a gather step needs args={"calls": [{"tool_name": ..., "args": {...}}, ...]}']
    problems: list[str] = []
    for position, call in enumerate(calls):
        if not isinstance(call, dict) or "tool_name" not in call:
            problems.append(f"gather call {position}: expected {{'tool_name': ..., 'args': ...}}")
            continue
        name, args = call["tool_name"], call.get("args", {})
        if name == GATHER:
            problems.append(f"gather call {position}: gather steps cannot be nested")
        elif not isinstance(args, dict):
            problems.append(f"gather call {position}: args must be a dict")
        else:
            problems.extend(
                f"gather call {position}: {problem}"
                for problem in _call_problems(name, args, tools)
            )
    return problems


def _call_problems(name: object, args: dict[str, Any], tools: Mapping[str, Tool]) -> list[str]:
    if not isinstance(name, str) or name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        return [f"unknown tool {name!r} (known tools: {known})"]
    non_str = [key for key in args if not isinstance(key, str)]
    if non_str:
        return [f"argument names must be str, got {non_str!r}"]
    try:
        tools[name].validate_arguments(args)
    except TFToolError as exc:
        return [str(exc)]
    return []
