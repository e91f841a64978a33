"""What changed between two tf_plan scripts: a text diff and the change in calls.

The call-level part compares the sequence of chain/tool calls of both scripts (name and
the source of each keyword argument, in source order), in the spirit of the
plan-execute agent's :class:`~dcbrain.agent.PlanDiff`: calls are ``removed``, ``added``,
``revised`` (same callable at the same place, other arguments) or ``unchanged``. Both
diffs reach events in one shape, :class:`~dcbrain.events.PlanDiffData`.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dcbrain.events import DiffItem, PlanDiffData, RevisedItem
from dcbrain.tfplan.errors import TFSyntaxError
from dcbrain.tfplan.parser import MAX_SOURCE_CHARS, shared_plan, shared_tree, walk

#: Calls of a plan that are listed and compared; a plan seldom makes more, and comparing
#: two sequences of calls takes time that grows faster than their length.
MAX_PLAN_CALLS = 100


@dataclass(frozen=True)
class PlanCall:
    """One call in a plan: the callable's name, its keyword arguments as source, its line."""

    name: str
    kwargs: dict[str, str]
    line: int = 0
    occurrence: int = 1

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return self.name, tuple(sorted(self.kwargs.items()))

    def describe(self) -> str:
        args = ", ".join(f"{key}={value}" for key, value in self.kwargs.items())
        return f"{self.name}({args})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kwargs": dict(self.kwargs), "line": self.line}

    def item(self) -> DiffItem:
        """The call as a diff item; its id is the name and which call of that name it is."""
        return DiffItem(id=f"{self.name}#{self.occurrence}", name=self.name,
                        args=dict(self.kwargs), line=self.line)


@dataclass(frozen=True)
class ScriptDiff:
    """The change from one tf_plan script to the next.

    ``unified`` is a unified text diff (difflib); ``removed``/``added`` list calls only
    in the old/new script, ``revised`` pairs ``(old, new)`` of the same callable whose
    arguments changed, ``unchanged`` calls present in both.
    """

    revision: int
    unified: str
    removed: list[PlanCall] = field(default_factory=list)
    added: list[PlanCall] = field(default_factory=list)
    revised: list[tuple[PlanCall, PlanCall]] = field(default_factory=list)
    unchanged: list[PlanCall] = field(default_factory=list)

    @classmethod
    def compute(
        cls,
        old: str,
        new: str,
        *,
        callables: Collection[str] | None = None,
        revision: int = 1,
    ) -> ScriptDiff:
        """Compare ``old`` with ``new``; ``callables`` limits the calls compared to these names."""
        unified = "".join(
            difflib.unified_diff(
                _lines(old), _lines(new), fromfile=f"plan {revision}",
                tofile=f"plan {revision + 1}",
            )
        )
        old_calls, new_calls = plan_calls(old, callables), plan_calls(new, callables)
        old_keys, new_keys = [call.key for call in old_calls], [call.key for call in new_calls]
        removed: list[PlanCall] = []
        added: list[PlanCall] = []
        revised: list[tuple[PlanCall, PlanCall]] = []
        if old_keys == new_keys:  # the same calls (a fix elsewhere): what the matcher finds
            return cls(revision, unified, removed, added, revised, list(new_calls))
        unchanged: list[PlanCall] = []
        matcher = difflib.SequenceMatcher(a=old_keys, b=new_keys, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                unchanged.extend(new_calls[j1:j2])
            elif tag == "delete":
                removed.extend(old_calls[i1:i2])
            elif tag == "insert":
                added.extend(new_calls[j1:j2])
            else:
                _pair_replaced(old_calls[i1:i2], new_calls[j1:j2], removed, added, revised)
        return cls(revision, unified, removed, added, revised, unchanged)

    @property
    def is_empty(self) -> bool:
        return not self.unified

    def to_data(self, reason: str | None = None) -> PlanDiffData:
        """The diff in the shape every plan revision event uses."""
        return PlanDiffData(
            revision=self.revision,
            unified=self.unified,
            removed=[call.item() for call in self.removed],
            added=[call.item() for call in self.added],
            revised=[RevisedItem(old=old.item(), new=new.item()) for old, new in self.revised],
            unchanged=[call.item() for call in self.unchanged],
            reason=reason,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_data().model_dump(mode="json", exclude_none=True)

    def render(self) -> str:
        """The call-level change as lines: ``-`` removed, ``+`` added, ``~`` changed."""
        lines = [f"plan revision {self.revision}"]
        lines.extend(f"- {call.describe()}" for call in self.removed)
        lines.extend(f"~ {old.describe()} -> {new.describe()}" for old, new in self.revised)
        lines.extend(f"+ {call.describe()}" for call in self.added)
        return "\n".join(lines)


def plan_calls(source: str, callables: Collection[str] | None = None) -> list[PlanCall]:
    """The first :data:`MAX_PLAN_CALLS` calls of ``source`` to plain names, in source order;
    ``[]`` if it does not parse or is longer than a plan may be.

    With ``callables`` only calls to those names count; without it, every call to a name
    (builtins included). A run lists each plan's calls when it is created and again when
    the next plan is compared with it: the calls of recent plans are kept.
    """
    if len(source) > MAX_SOURCE_CHARS:
        return []
    return list(_plan_calls(source, None if callables is None else frozenset(callables)))


@lru_cache(maxsize=64)
def _plan_calls(source: str, callables: frozenset[str] | None) -> tuple[PlanCall, ...]:
    try:
        # the plan as the interpreter validates it (and then reads it again): its nodes
        # are listed already
        nodes: Iterable[ast.AST] = shared_plan(source).nodes()
    except TFSyntaxError:  # not a valid plan: its calls are still listed, if it parses
        try:
            nodes = walk(shared_tree(source))  # only read
        except (SyntaxError, ValueError, RecursionError):
            return ()
    found: list[tuple[int, int, ast.Call]] = []
    for node in nodes:  # the nodes of ast.walk, in its order
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if callables is not None and node.func.id not in callables:
            continue
        found.append((node.lineno, node.col_offset, node))
    found.sort(key=lambda item: (item[0], item[1]))
    seen: dict[str, int] = {}
    numbered = []
    for _, _, node in found[:MAX_PLAN_CALLS]:  # only these are unparsed
        call = _plan_call(node)
        seen[call.name] = seen.get(call.name, 0) + 1
        numbered.append(PlanCall(call.name, call.kwargs, call.line, seen[call.name]))
    return tuple(numbered)


def _plan_call(node: ast.Call) -> PlanCall:
    assert isinstance(node.func, ast.Name)
    kwargs = {
        keyword.arg if keyword.arg is not None else "**": _source(keyword.value)
        for keyword in node.keywords
    }
    for index, arg in enumerate(node.args):
        kwargs[f"#{index}"] = _source(arg)
    return PlanCall(node.func.id, kwargs, node.lineno)


#: Constants whose ``ast.unparse`` is their ``repr`` (outside an f-string, as here).
_REPR_CONSTANTS = (str, int, bool, type(None))


def _source(node: ast.expr) -> str:
    """``ast.unparse(node)``; a name or a plain constant, the usual argument, written
    directly (the same text)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and node.kind is None \
            and type(node.value) in _REPR_CONSTANTS:
        return repr(node.value)
    return ast.unparse(node)


def _pair_replaced(
    old: list[PlanCall],
    new: list[PlanCall],
    removed: list[PlanCall],
    added: list[PlanCall],
    revised: list[tuple[PlanCall, PlanCall]],
) -> None:
    """Within a replaced block, a new call takes the first unmatched old call of its name."""
    unmatched = list(old)
    for call in new:
        partner = next((item for item in unmatched if item.name == call.name), None)
        if partner is None:
            added.append(call)
        else:
            unmatched.remove(partner)
            revised.append((partner, call))
    removed.extend(unmatched)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines
