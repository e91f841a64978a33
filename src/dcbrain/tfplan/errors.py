"""Errors of the tf_plan language, and :class:`TFError`, the root of every dcbrain error.

A plan's errors carry ``line:col`` and the offending line: ``str(error)`` is
``"line:col: Kind: message"`` followed by the source line and a caret, which is what the
planner sees when a plan fails. The root :class:`TFError` lives in
``dcbrain.exceptions`` (the foundation) and is re-exported here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from dcbrain.exceptions import TFError as TFError
from dcbrain.tfplan.result import CallRecord, ConsoleResult

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(source: str) -> list[str]:
    """The lines of a plan's source as Python numbers them: broken at ``\\n``, ``\\r\\n``
    and ``\\r`` only. (``str.splitlines`` also breaks at a form feed, ``\\v``,
    ``\\x1c``-``\\x1e``, ``\\x85``, U+2028 and U+2029, which a string literal may hold.)"""
    lines = _LINE_BREAK.split(source)
    if lines[-1] == "":  # no line after a final line break, as with str.splitlines
        lines.pop()
    return lines


@dataclass(frozen=True)
class Problem:
    """One problem found in a plan before it runs (syntax, rejected construct, check)."""

    line: int
    col: int
    message: str
    kind: str = "error"

    def __str__(self) -> str:
        return f"{self.line}:{self.col}: {self.message}"


#: Problems reported of one plan; past it the planner has enough to revise it, and a plan
#: of garbage costs no more to report than this many.
MAX_PROBLEMS = 20


def first_problems(problems: list[Problem]) -> list[Problem]:
    """The first :data:`MAX_PROBLEMS` of ``problems`` (in source order), then one saying
    how many more there are."""
    if len(problems) <= MAX_PROBLEMS:
        return problems
    rest = problems[MAX_PROBLEMS]
    more = Problem(rest.line, rest.col, f"... and {len(problems) - MAX_PROBLEMS} more "
                                        "problems", kind=rest.kind)
    return [*problems[:MAX_PROBLEMS], more]


class TFInterpreterError(TFError):
    """Base of every error a plan can cause: syntax, check, runtime, limits.

    ``kind`` is the error's name as the planner sees it (``"KeyError"``,
    ``"SyntaxError"``, ``"OperationLimitExceeded"`` …); ``line``/``col`` are 1-based
    (col 0 when unknown is shown as 1); ``stdout`` keeps what the plan printed before
    failing and ``trace`` the host calls made so far; ``abandoned_calls`` how many calls
    were still running when the run stopped waiting for them.
    """

    default_kind = "TFInterpreterError"

    def __init__(
        self,
        message: str,
        *,
        line: int = 0,
        col: int = 0,
        kind: str | None = None,
        source_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind or self.default_kind
        self.line = line
        self.col = col
        self.source_line = source_line
        self.stdout = ""
        self.trace: list[CallRecord] = []
        self.abandoned_calls = 0
        self._partial: ConsoleResult | None = None

    @property
    def partial_result(self) -> ConsoleResult:
        """What the plan did before it failed: its output and calls (no value). The layer
        that supplied the callables may replace it with its own, richer result."""
        if self._partial is None:
            self._partial = ConsoleResult(value=None, stdout=self.stdout, trace=list(self.trace),
                                          abandoned_calls=self.abandoned_calls)
        return self._partial

    @partial_result.setter
    def partial_result(self, result: ConsoleResult) -> None:
        self._partial = result

    @property
    def location(self) -> str:
        return f"{self.line}:{self.col}"

    def headline(self) -> str:
        return f"{self.line}:{self.col}: {self.kind}: {self.message}"

    def __str__(self) -> str:
        text = self.headline()
        if self.source_line is not None:
            stripped = self.source_line.rstrip()
            caret = " " * max(self.col - 1, 0) + "^"
            text += f"\n    {stripped}\n    {caret}"
        return text

    def with_position(self, line: int, col: int, source_line: str | None) -> TFInterpreterError:
        if not self.line:
            self.line, self.col = line, col
            self.source_line = source_line
        return self


class TFProblemsError(TFInterpreterError):
    """Several problems found before running; ``problems`` lists them all in order."""

    def __init__(self, problems: list[Problem], source: str) -> None:
        first = problems[0]
        lines = source_lines(source)
        source_line = lines[first.line - 1] if 0 < first.line <= len(lines) else None
        super().__init__(first.message, line=first.line, col=first.col, source_line=source_line)
        self.problems = problems
        self.tree: ast.Module | None = None

    def __str__(self) -> str:
        return "\n".join(str(problem) for problem in self.problems)


class TFSyntaxError(TFProblemsError):
    """The plan is not valid tf_plan syntax, or uses a construct the language rejects."""

    default_kind = "SyntaxError"


class TFCheckError(TFProblemsError):
    """The plan is well-formed but names or calls things that cannot work."""

    default_kind = "CheckError"


class TFRuntimeError(TFInterpreterError):
    """The plan raised while running; ``kind`` is the Python exception's name."""


class TFCallError(TFRuntimeError):
    """A chain or tool called by the plan failed; ``__cause__`` is the original error.

    ``transient``: the original error said a new try of the call may pass (its own
    ``transient`` attribute is true), so running the plan again is not pointless.
    """

    transient: bool = False


class TFToolTimeout(TFCallError):
    """A chain or tool call outlived its own ``timeout_s``: the call failed (a sync
    callable's thread is abandoned and runs on; its return is ignored). Not a
    ``TimeoutError``, so retries do not try it again unless ``retry_on`` names it: a retry
    would run a sync tool a second time while its first call may still be running."""

    default_kind = "TFToolTimeout"


class TFToolUnavailable(TFCallError):
    """A chain or tool was not called: the process holds its limit of threads of calls
    that outlived their deadline, some of them of this callable, still running (see
    :mod:`dcbrain.tfplan.abandoned`). It is called again once they return."""

    default_kind = "TFToolUnavailable"


class TFApprovalDenied(TFCallError):
    """A call that needed a person's approval was denied (by the person, or because nobody
    decided in time): the plan fails at the call, and the planner sees why."""

    default_kind = "TFApprovalDenied"


class TFPolicyDenied(TFCallError):
    """A policy refused a chain or tool call before it ran (its arguments carried data
    from sources the callee does not accept). The message names the argument, its
    untrusted sources and the policy, never the data itself; ``argument``, ``sources``
    and ``policy`` hold the same for code."""

    default_kind = "TFPolicyDenied"
    argument: str | None = None
    sources: tuple[str, ...] = ()
    policy: str = ""


class FlowCheckOutOfSteps(Exception):
    """The static flow check used its steps: what it found so far is still certain (never
    leaves :mod:`dcbrain.tfplan.flow`)."""


class TFLimitError(TFInterpreterError):
    """A sandbox limit was hit. ``limit`` names it as in :class:`Limits`.

    A subclass names its limit as a class keyword (``limit="max_calls"``); its
    ``default_kind`` is then its own name.
    """

    limit = ""

    def __init_subclass__(cls, *, limit: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if limit is not None:
            cls.limit = limit
            cls.default_kind = cls.__name__


class OperationLimitExceeded(TFLimitError, limit="max_operations"):
    """More operations than ``max_operations``."""


class CallDepthLimitExceeded(TFLimitError, limit="max_call_depth"):
    """Calls nested deeper than ``max_call_depth``."""


class TimeLimitExceeded(TFLimitError, limit="timeout_s"):
    """The plan ran longer than ``timeout_s``."""


class SizeLimitExceeded(TFLimitError, limit="max_size"):
    """A value larger than ``max_size``."""


class HostMemoryExceeded(SizeLimitExceeded):
    """What the host keeps for one plan run outgrew ``max_host_mb`` (``limit``), or what
    it keeps for all the runs of the process outgrew ``process_host_mb``; ``budget`` is
    the run's :class:`~dcbrain.tfplan.host_budget.HostBudget` that refused it."""

    limit = "max_host_mb"

    def __init__(self, message: str, *, budget: object = None, **position: Any) -> None:
        super().__init__(message, **position)
        self.budget = budget


class BranchLimitExceeded(TFLimitError, limit="max_branches"):
    """A ``parallel(...)`` with more branches than ``max_branches``: refused before any
    branch was built."""


class OutputLimitExceeded(TFLimitError, limit="max_output_chars"):
    """More printed output than ``max_output_chars``."""


class CallLimitExceeded(TFLimitError, limit="max_calls"):
    """More chain and tool calls than ``max_calls``."""


class PlanCancelled(TFInterpreterError):
    default_kind = "Cancelled"


class NotPlainData(TFError, TypeError):
    """A value handed across the plan/host boundary is not plain data."""


class FormatLimitError(TFError, ValueError):
    """A format width or precision larger than the plan's size limit."""


class Expired(BaseException):
    """Delivered asynchronously into plan threads when the wall-time limit passes.

    A ``BaseException`` signal, not an error: nothing on its way may swallow it.
    """


class Cancelled(BaseException):
    """Delivered asynchronously into plan threads when the run is cancelled."""


class PlanProcessCrashed(TFInterpreterError):
    """The sandbox process running the plan died (a signal, or out of memory)."""

    default_kind = "PlanProcessCrashed"


class ChannelClosed(Exception):
    """The other end of a sandbox process's channel is gone."""


class MessageTooLarge(ChannelClosed):
    """A message longer than the channel accepts: refused from its header, never read
    (the stream cannot be read on past it)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message of {size} bytes refused (at most {limit})")
        self.size = size
        self.limit = limit


class HostCallFailed(BaseException):
    """Raised in a sandbox process: the host's call failed; the plan ends and the host
    reports that call's error."""

    def __init__(self, call_id: int) -> None:
        super().__init__(call_id)
        self.call_id = call_id
        self.stdout = ""
