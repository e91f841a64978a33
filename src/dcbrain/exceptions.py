"""Every exception a user of dcbrain may catch, in one tree rooted in :class:`TFError`.

This module is part of the foundation: it imports nothing of dcbrain, so every layer may
raise its errors. The plan language's own errors are defined in ``dcbrain.tfplan.errors``
(they carry a plan's line, column and partial result, which are the language's) and are
importable from here too, on first use. The tree, by layer::

    TFError
    ├── values: ScalarError, TFSchemaError, TFRecordedCallError
    ├── plan language (dcbrain.tfplan.errors): TFInterpreterError
    │   ├── TFSyntaxError, TFCheckError              (before the plan runs)
    │   ├── TFRuntimeError → TFCallError → TFToolTimeout, TFToolUnavailable,
    │   │                                  TFApprovalDenied, TFPolicyDenied
    │   ├── TFLimitError → OperationLimitExceeded, TimeLimitExceeded, SizeLimitExceeded, …
    │   └── PlanCancelled, PlanProcessCrashed
    ├── tools: TFToolError → TFMCPError → TFMCPTransportError; TransientError → RetriesExhausted
    ├── models: TFLLMInterrupt → TFTokenBudgetExceeded, TFLLMError → TFLLMUnavailable, …
    ├── chains: TFChainError → OutputMismatch, TFPromptVariableError; TFOrchestrationError
    ├── brains: TFBrainError → TFBrainBusyError; TFPlanError; TFFatalStepError;
    │           TFUserNewInputError; AbortRequested; ApprovalRequired; TFApprovalError
    ├── stores: TFMemoryError, StoreWriteError, DatabaseUnavailable, DBOSContractError
    ├── runs: TooManyRuns, InvalidRunQuery, RunConflict, DurableRunError
    ├── configuration: ConfigError
    └── surfaces: ApiError

Outside the tree, on purpose (``BaseException``: no handler of the brain may swallow
them): :class:`RunSuspended` and :class:`JournalDivergence`.
"""

from __future__ import annotations

import importlib
from typing import Any


class TFError(Exception):
    """Base of every error dcbrain raises."""


class TFChainError(TFError):
    """A chain failed: bad template, invalid structured output after repair and retry, …"""


class ScalarError(TFError, ValueError):
    """A decimal, date or time value that a plan may not hold (an exponent past the limit)."""


class DBOSContractError(TFError, RuntimeError):
    """The installed DBOS no longer has a private name the durable adapter relies on."""


class OutputMismatch(TFChainError):
    """A run's accepted answer does not match its output type (the planner is told)."""


class TFPromptVariableError(TFChainError):
    """A prompt template needs a variable (or a field of one) that was not given."""


class TFToolError(TFError):
    """A tool was called with wrong arguments or returned something that is not data."""


class TransientError(TFError):
    """A failure that may pass if the same call is made again (``SMTP 451 try again``, a
    dropped connection).

    A tool raises it to declare a failure retryable: a tool with ``retries`` tries again,
    and a replan may run the same plan again (see ``docs/brain.md``). ``transient`` is
    what the plan layer reads off the error.
    """

    transient = True


class RetriesExhausted(TransientError):
    """A call failed with a transient error on each of its ``attempts``; ``__cause__`` is
    the last error."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class TFSchemaError(TFError):
    """A JSON Schema was refused, or could not finish validating a value.

    ``origin`` says where the schema came from (``"chain 'x': output_json_schema"``),
    ``where`` the JSON path of its bad part (``""`` for the whole schema).
    """

    def __init__(self, message: str, *, origin: str, where: str = "") -> None:
        super().__init__(message)
        self.origin = origin
        self.where = where


class TFRecordedCallError(TFError):
    """A call the run journal holds as failed, answered again with its recorded error;
    ``transient`` as the recorded error was."""

    transient: bool = False


class TFLLMInterrupt(TFError):
    """An LLM call was interrupted (budget, cancellation, provider gave up)."""


class TFTokenBudgetExceeded(TFLLMInterrupt):
    """An LLM call was refused before it was sent: it could overrun the token budget.

    ``requested`` is the call's projected size (counted prompt plus its maximum output),
    ``used`` the tokens spent so far and ``limit`` the budget.
    """

    def __init__(self, message: str, *, requested: int = 0, used: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.requested = requested
        self.used = used
        self.limit = limit


class TFLLMError(TFLLMInterrupt):
    """The provider failed after its retries (HTTP error, timeout, malformed body)."""


class TFLLMUnavailable(TFLLMError, TransientError):
    """The provider stayed unavailable through its retries (429, 5xx, a timeout, a failed
    connection): a later try may pass."""


class LocalModelUnavailable(TFLLMError):
    """The runtime or the weights of the embedded model are not installed."""


class TFScriptExhaustedError(TFLLMError):
    """A :class:`~dcbrain.llm.ScriptedLLM` was called after its last scripted reply."""


class TFUserNewInputError(TFError):
    """The user sent a new message mid-run; raised at the next safe point, never swallowed."""

    def __init__(self, message: str = "new user input", *, new_input: Any = None) -> None:
        super().__init__(message)
        self.new_input = new_input


class TFMemoryError(TFError):
    """The memory store cannot be used: e.g. its schema is newer than this library."""


class TFNeuralError(TFError):
    """An error of the :class:`~dcbrain.neural.Neural` mailbox (kept for code that catches
    it: the mailbox itself raises only :class:`TFUserNewInputError`)."""


class TFNeuralTimeoutError(TFNeuralError, TimeoutError):
    """A wait on the mailbox outlived its timeout (kept for code that catches it)."""


class TFPlanError(TFError):
    """A planner returned a malformed plan (or unparsable output); the agent replans."""


class TFReferenceError(TFPlanError):
    """A ``{"$ref": "step-N.result…"}`` in a step's arguments is malformed or unresolvable."""


class TFMCPError(TFToolError):
    """An MCP server could not be started or reached (its name and the cause are said)."""


class TFMCPTransportError(TFMCPError, TransientError):
    """The connection to an MCP server failed during a call (lost, refused, timed out): the
    same call may pass on a new try."""


class TFFatalStepError(TFError):
    """Raised by a tool when no new plan can help; the agent stops with ``fatal_error``."""


class TFBrainError(TFError):
    """The brain stopped abnormally (e.g. timeout); ``result`` holds the partial result."""

    # ``result`` is a ``dcbrain.brain.BrainResult``; typed loosely so that this module
    # stays below the brain.
    def __init__(self, message: str, *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result

    @property
    def partial_result(self) -> Any:
        """The run as far as it got (``result``, the name the product's API fixes)."""
        return self.result


class TFBrainBusyError(TFBrainError, RuntimeError):
    """A run was started in a conversation that already has one running (one run per
    conversation; one brain runs many conversations at once)."""


class TFOrchestrationError(TFError, ValueError):
    """DCChains found no working plan in ``max_plan_times`` attempts.

    ``failed_plans``/``failed_infos`` hold each failed script (or reply) and why it
    failed; ``usage`` the tokens of every attempt; ``result`` the partial ChainResult.
    """

    def __init__(
        self,
        message: str,
        *,
        failed_plans: list[str],
        failed_infos: list[str],
        usage: Any = None,
        result: Any = None,
    ) -> None:
        super().__init__(message)
        self.failed_plans = failed_plans
        self.failed_infos = failed_infos
        self.usage = usage
        self.result = result

    @property
    def partial_result(self) -> Any:
        """The chain run as far as it got (``result``, the name the product's API fixes)."""
        return self.result


class ConfigError(TFError):
    """A configuration problem; ``problems`` are ``key.path: message`` strings."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {problem}" for problem in problems))


class AbortRequested(TFError):
    """Raised inside a run when ``DCBrain.abort()`` was called."""


class ApprovalRequired(TFError):
    """A plan reached calls that wait for a person's decision: it stops there, and runs
    again from its journal once they are decided (never an error the planner sees)."""


class TFApprovalError(TFError):
    """A decision that cannot be taken: an unknown run or call (``status`` 404), a call
    already decided or whose arguments changed (409)."""

    def __init__(self, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


class EagerStopped(Exception):
    """An eager (early) run of a streamed plan may make no new call: the whole plan has
    arrived, or an early call failed; the whole plan makes the call itself."""


class RunSuspended(BaseException):
    """A durable run stops executing until its pending approvals are decided.

    A ``BaseException``, as :class:`JournalDivergence` is: it passes every handler of the
    brain; the worker records the run as ``waiting`` and another execution resumes it.
    """


class ApiError(TFError):
    """An error answered as ``{"error": code, "detail": message}`` with ``status``."""

    def __init__(
        self, status: int, code: str, detail: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers


class TooManyRuns(TFError):
    """Every run slot is taken; the caller should retry later."""

    def __init__(self, limit: int, detail: str | None = None) -> None:
        if detail is None:
            runs = "1 run is" if limit == 1 else f"{limit} runs are"
            detail = f"{runs} already active (the limit); retry when one has finished"
        super().__init__(detail)
        self.limit = limit


class InvalidRunQuery(TFError, ValueError):
    """A run listing's status, page size or cursor is not one the store reads."""


class RunConflict(TFError):
    """A run cannot do what was asked in the state it is in (resume a finished run, ...)."""


class DurableRunError(TFError):
    """A durable run ended by an exception the brain does not handle (recorded as ``failed``).

    Also what a ``BaseException`` from inside a run becomes: one reaching DBOS would leave
    the workflow pending forever, and its callers waiting.
    """


class StoreWriteError(TFError):
    """A batch of a durable run's events and journal rows could not be stored."""


class DatabaseUnavailable(TFError):
    """The database of durable runs cannot be reached, or its schema is not migrated yet.

    Passing: the server answers ``503`` with ``Retry-After: retry_after_s`` and every
    process reconnects by itself once the database is back.
    """

    def __init__(self, detail: str, *, retry_after_s: int = 2) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


class JournalDivergence(BaseException):
    """A replayed durable run asked for another call than the one recorded.

    A ``BaseException`` on purpose, outside the ``TFError`` tree: it must pass every handler
    of the brain and the plan interpreter (an ``Exception`` there becomes a plan error, and
    the brain would replan and run calls live again). The worker turns it into a failed run.
    """


#: The plan language's errors a user may catch, defined in ``dcbrain.tfplan.errors`` (the
#: language is above this module) and imported from there on first use (not in
#: ``__all__``: a star import of this module stays free of the language).
_LANGUAGE_ERRORS = frozenset({
    "BranchLimitExceeded",
    "CallDepthLimitExceeded",
    "CallLimitExceeded",
    "FormatLimitError",
    "HostMemoryExceeded",
    "NotPlainData",
    "OperationLimitExceeded",
    "OutputLimitExceeded",
    "PlanCancelled",
    "PlanProcessCrashed",
    "SizeLimitExceeded",
    "TFApprovalDenied",
    "TFCallError",
    "TFCheckError",
    "TFInterpreterError",
    "TFLimitError",
    "TFPolicyDenied",
    "TFRuntimeError",
    "TFSyntaxError",
    "TFToolTimeout",
    "TFToolUnavailable",
    "TimeLimitExceeded",
})


def __getattr__(name: str) -> Any:
    if name not in _LANGUAGE_ERRORS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("dcbrain.tfplan.errors"), name)
    globals()[name] = value  # later look-ups do not come here again
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LANGUAGE_ERRORS})


__all__ = [
    "AbortRequested",
    "ApiError",
    "ApprovalRequired",
    "ConfigError",
    "DBOSContractError",
    "DatabaseUnavailable",
    "DurableRunError",
    "InvalidRunQuery",
    "LocalModelUnavailable",
    "OutputMismatch",
    "RetriesExhausted",
    "RunConflict",
    "ScalarError",
    "StoreWriteError",
    "TFApprovalError",
    "TFBrainBusyError",
    "TFBrainError",
    "TFChainError",
    "TFError",
    "TFFatalStepError",
    "TFLLMError",
    "TFLLMInterrupt",
    "TFLLMUnavailable",
    "TFMCPError",
    "TFMCPTransportError",
    "TFMemoryError",
    "TFNeuralError",
    "TFNeuralTimeoutError",
    "TFOrchestrationError",
    "TFPlanError",
    "TFPromptVariableError",
    "TFReferenceError",
    "TFSchemaError",
    "TFScriptExhaustedError",
    "TFTokenBudgetExceeded",
    "TFToolError",
    "TFUserNewInputError",
    "TooManyRuns",
    "TransientError",
]
