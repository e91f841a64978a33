"""The one diff shape of brain and agent plan revisions, as ``plan_revised`` carries it
(see :mod:`dcbrain.events`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class DiffItem(BaseModel):
    """One call of a plan in a diff: a brain plan's call or an agent's step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    name: str
    args: dict[str, Any] = {}
    line: int | None = None


class RevisedItem(BaseModel):
    """A call present in both plans whose arguments changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    old: DiffItem
    new: DiffItem


class PlanDiffData(BaseModel):
    """The one diff shape of brain and agent revisions.

    ``removed``: calls of the old plan gone from the new one; ``added``: new calls;
    ``revised``: same call site, other arguments; ``unchanged``: in both;
    ``done``: already executed calls the new plan does not repeat (agent);
    ``unified``: the unified text diff of two tf_plan scripts (brain).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    revision: int
    removed: list[DiffItem] = []
    added: list[DiffItem] = []
    revised: list[RevisedItem] = []
    unchanged: list[DiffItem] = []
    done: list[DiffItem] = []
    unified: str | None = None
    reason: str | None = None
