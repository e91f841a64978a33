"""The complete top-level statements of a plan that is still being written.

A planner streams its reply; :class:`PlanFeed` takes the text as it arrives and tells
which top-level statements of the plan in it are complete: the plan block's text (the
first ```tf_plan or ```python fence) up to a line boundary where it parses
(CPython's ``ast``), without the last statement when that one is a compound statement
whose body may still continue (``if``, ``for``, ``def`` ...). A string spanning lines or
a bracket left open does not parse, so a statement counts only once its end arrived.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dcbrain.tfplan.parser import syntax_tree

#: The opening fence of a plan block (a fence with a language that holds a plan).
_OPENING = re.compile(r"```[ \t]*(tf_plan|tfplan|python|py)[ \t]*\n")
#: A closing fence at the start of a line.
_CLOSING = re.compile(r"\n[ \t]*```")
#: Lines that continue the compound statement before them, not a new statement.
_CONTINUING = ("else", "elif", "except", "finally", "case")
#: Line boundaries tried, the latest first, when the newest statement is not complete.
_CUTS_TRIED = 8
#: Statements whose body may go on on the next lines.
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match, ast.TryStar)


@dataclass(frozen=True)
class Statement:
    """One complete top-level statement: its source lines and the names it refers to."""

    source: str
    first_line: int
    last_line: int
    names: frozenset[str]


class PlanFeed:
    """The plan of a reply being written, as far as its statements are complete."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text = ""
        self._lines_seen = 0
        self.statements: list[Statement] = []
        #: Whether the plan block is closed (or the reply ended): no statement follows.
        self.closed = False

    def add(self, text: str) -> bool:
        """Take more of the reply; whether more statements are complete now."""
        if not text or self.closed:
            return False
        self._parts.append(text)
        if "\n" not in text:
            return False
        return self._advance()

    def end(self) -> bool:
        """The reply ended: its last line is complete too."""
        if self.closed:
            return False
        self._parts.append("\n")
        grew = self._advance(final=True)
        self.closed = True
        return grew

    def _advance(self, final: bool = False) -> bool:
        self._text = "".join(self._parts)
        self._parts = [self._text]
        body = plan_body(self._text)
        if body is None:
            return False
        source, closed = body
        complete = source[:source.rfind("\n") + 1] if not closed else source + "\n"
        lines = complete.count("\n")
        if lines == self._lines_seen and not closed:
            return False
        self._lines_seen = lines
        found = complete_statements(complete, last_complete=closed or final)
        if closed:
            self.closed = True
        if len(found) <= len(self.statements):
            return False
        self.statements = found
        return True


def plan_body(reply: str) -> tuple[str, bool] | None:
    """The plan block of ``reply`` so far (leading blank lines dropped) and whether its
    closing fence arrived; ``None`` before an opening fence."""
    opening = _OPENING.search(reply)
    if opening is None:
        return None
    body = reply[opening.end():]
    closing = _CLOSING.search("\n" + body)
    closed = closing is not None
    if closing is not None:
        body = body[:max(closing.start() - 1, 0)]
    return body.lstrip("\n"), closed


def complete_statements(source: str, *, last_complete: bool = False) -> list[Statement]:
    """The top-level statements of ``source`` (whole lines) known to be complete."""
    tree = _parsed(source)
    if tree is None:
        # a statement is still being written: the statements before the line it starts on
        for cut in _top_level_starts(source):
            tree = _parsed(source[:cut])
            if tree is not None:
                last_complete = True
                source = source[:cut]
                break
        else:
            return []
    body = list(tree.body)
    if body and not last_complete and isinstance(body[-1], _COMPOUND):
        body.pop()  # its body may go on
    lines = source.splitlines(keepends=True)
    found = []
    for node in body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        found.append(Statement("".join(lines[first - 1:last]), first, last,
                               frozenset(_names(node))))
    return found


def prefix_source(source_lines: Sequence[Statement]) -> str:
    """The plan's text through the last of ``source_lines``' statements."""
    return "".join(statement.source for statement in source_lines)


def _parsed(source: str) -> ast.Module | None:
    if not source.strip():
        return None
    try:
        return syntax_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _top_level_starts(source: str) -> list[int]:
    """Where the latest lines that may start a new top-level statement begin (not the
    first line), the latest first (at most :data:`_CUTS_TRIED`)."""
    starts: list[int] = []
    end = len(source.rstrip("\n"))
    while len(starts) < _CUTS_TRIED:
        start = source.rfind("\n", 0, end) + 1
        if start == 0:
            break
        line = source[start:end]
        first = line[:1]
        word = re.match(r"\w*", line)
        if (first.isidentifier() or first in ("@", '"', "'")) \
                and (word is None or word.group(0) not in _CONTINUING):
            starts.append(start)
        end = start - 1
    return starts


def _names(node: ast.AST) -> Iterable[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            yield child.id
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield child.name


__all__ = ["PlanFeed", "Statement", "complete_statements", "plan_body", "prefix_source"]
