"""What changed between two plans, as data and as text: revisions are visible events."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dcbrain.agent.step import Step
from dcbrain.events import DiffItem, PlanDiffData, RevisedItem

_STRIKE, _GREEN, _DIM, _RESET = "\x1b[9;31m", "\x1b[32m", "\x1b[2m", "\x1b[0m"


@dataclass(frozen=True)
class PlanDiff:
    """The change from one plan revision to the next, compared by step id.

    - ``removed``: ids of the old plan that had not run yet (the failed step and those
      after it) and are gone from the new plan;
    - ``added``: ids of the new plan the old plan did not have;
    - ``revised``: ids in both plans whose ``tool_name`` or ``args`` changed;
    - ``unchanged``: ids in both plans with the same call;
    - ``done``: ids of the old plan that ran before the failure and are not in the new
      plan (finished work, not removed work).

    ``old_steps`` and ``new_steps`` are the two plans, so a UI can draw every line.
    """

    revision: int
    removed: list[int]
    added: list[int]
    revised: list[int]
    unchanged: list[int] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    old_steps: list[Step] = field(default_factory=list)
    new_steps: list[Step] = field(default_factory=list)
    reason: str | None = None

    @classmethod
    def compute(
        cls,
        old: Sequence[Step],
        new: Sequence[Step],
        *,
        done_ids: Collection[int] = (),
        revision: int = 1,
        reason: str | None = None,
    ) -> PlanDiff:
        """Compare ``old`` with ``new``; ``done_ids`` are old steps that already ran."""
        old_by_id = {step.id: step for step in old}
        new_ids = {step.id for step in new}
        added = [step.id for step in new if step.id not in old_by_id]
        revised = [
            step.id
            for step in new
            if step.id in old_by_id and not step.same_call(old_by_id[step.id])
        ]
        unchanged = [
            step.id for step in new if step.id in old_by_id and step.same_call(old_by_id[step.id])
        ]
        removed = [step.id for step in old if step.id not in new_ids and step.id not in done_ids]
        done = [step.id for step in old if step.id not in new_ids and step.id in done_ids]
        return cls(
            revision=revision,
            removed=removed,
            added=added,
            revised=revised,
            unchanged=unchanged,
            done=done,
            old_steps=[step.snapshot() for step in old],
            new_steps=[step.snapshot() for step in new],
            reason=reason,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanDiff:
        """The diff back from :meth:`to_dict`, or from a ``plan_revised`` event's dict."""
        if "diff" in data:
            return cls.from_data(PlanDiffData.model_validate(data["diff"]))
        return cls(
            revision=data["revision"],
            removed=list(data["removed"]),
            added=list(data["added"]),
            revised=list(data["revised"]),
            unchanged=list(data.get("unchanged", [])),
            done=list(data.get("done", [])),
            old_steps=[Step.from_dict(step) for step in data.get("old_steps", [])],
            new_steps=[Step.from_dict(step) for step in data.get("new_steps", [])],
            reason=data.get("reason"),
        )

    @property
    def is_empty(self) -> bool:
        """True when the new plan makes the same calls under the same ids."""
        return not (self.removed or self.added or self.revised)

    def to_dict(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "reason": self.reason,
            "removed": list(self.removed),
            "added": list(self.added),
            "revised": list(self.revised),
            "unchanged": list(self.unchanged),
            "done": list(self.done),
            "old_steps": [step.to_dict() for step in self.old_steps],
            "new_steps": [step.to_dict() for step in self.new_steps],
        }

    @classmethod
    def from_data(cls, data: PlanDiffData) -> PlanDiff:
        """The diff back from its event shape (steps carry their id, tool and arguments)."""
        def steps(*groups: list[DiffItem]) -> list[Step]:
            found = {item.id: item for group in groups for item in group}
            return [Step(id=int(item.id), tool_name=item.name, args=dict(item.args))
                    for item in sorted(found.values(), key=lambda item: int(item.id))]

        def ids(items: list[DiffItem]) -> list[int]:
            return [int(item.id) for item in items]

        return cls(
            revision=data.revision,
            removed=ids(data.removed),
            added=ids(data.added),
            revised=[int(item.new.id) for item in data.revised],
            unchanged=ids(data.unchanged),
            done=ids(data.done),
            old_steps=steps(data.removed, [item.old for item in data.revised], data.unchanged,
                            data.done),
            new_steps=steps(data.added, [item.new for item in data.revised], data.unchanged),
            reason=data.reason,
        )

    def to_data(self) -> PlanDiffData:
        """The diff in the shape every plan revision event uses (items by step id)."""
        old_by_id = {step.id: step for step in self.old_steps}
        new_by_id = {step.id: step for step in self.new_steps}
        return PlanDiffData(
            revision=self.revision,
            reason=self.reason,
            removed=[_item(old_by_id[step_id]) for step_id in self.removed],
            added=[_item(new_by_id[step_id]) for step_id in self.added],
            revised=[RevisedItem(old=_item(old_by_id[step_id]), new=_item(new_by_id[step_id]))
                     for step_id in self.revised],
            unchanged=[_item(new_by_id[step_id]) for step_id in self.unchanged],
            done=[_item(old_by_id[step_id]) for step_id in self.done],
        )

    def render(self, style: Literal["text", "ansi"] = "text") -> str:
        """The diff as lines: finished work, struck removed lines, ``+`` added lines.

        ``text`` strikes with ``- ~~…~~`` (Markdown); ``ansi`` uses terminal strike-through
        and colour. Revised steps show the old call struck, then the new one.
        """
        old_by_id = {step.id: step for step in self.old_steps}
        header = f"plan revision {self.revision}"
        # Lines follow step ids, the identity the diff is computed on.
        entries: list[tuple[int, int, str]] = []
        for step_id in self.done:
            entries.append((step_id, 0, _line(" ", old_by_id[step_id], "done", style)))
        for step_id in self.removed:
            entries.append((step_id, 0, _struck(old_by_id[step_id], style)))
        for step in self.new_steps:
            if step.id in self.revised:
                entries.append((step.id, 0, _struck(old_by_id[step.id], style)))
                entries.append((step.id, 1, _line("+", step, "revised", style)))
            elif step.id in self.added:
                entries.append((step.id, 1, _line("+", step, "added", style)))
            else:
                entries.append((step.id, 1, _line(" ", step, "", style)))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        lines = [f"{header}: {self.reason}" if self.reason else header]
        lines.extend(line for _, _, line in entries)
        return "\n".join(lines)


def _item(step: Step) -> DiffItem:
    return DiffItem(id=str(step.id), name=step.tool_name, args=dict(step.args))


def _struck(step: Step, style: str) -> str:
    if style == "ansi":
        return f"{_STRIKE}- {step.describe()}{_RESET}"
    return f"- ~~{step.describe()}~~"


def _line(marker: str, step: Step, note: str, style: str) -> str:
    text = f"{marker} {step.describe()}"
    if note:
        text += f"  ({note})"
    if marker == "+" and step.expected_outcome:
        text += f"  expect: {step.expected_outcome}"
    if style == "ansi" and marker == "+":
        return f"{_GREEN}{text}{_RESET}"
    if style == "ansi" and note == "done":
        return f"{_DIM}{text}{_RESET}"
    return text
