"""Every exception dcbrain raises, in one place."""

from __future__ import annotations

from typing import Any

from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    CallLimitExceeded,
    OperationLimitExceeded,
    OutputLimitExceeded,
    PlanCancelled,
    SizeLimitExceeded,
    TFCallError,
    TFCheckError,
    TFInterpreterError,
    TFLimitError,
    TFRuntimeError,
    TFSyntaxError,
    TimeLimitExceeded,
)


class TFError(Exception):
    """Base of dcbrain's own errors outside the tf_plan language."""


class TFChainError(TFError):
    """A chain failed: bad template, invalid structured output after repair and retry, …"""


class TFToolError(TFError):
    """A tool was called with wrong arguments or returned something that is not data."""


class TFLLMInterrupt(TFError):
    """An LLM call was interrupted (budget, cancellation, provider gave up)."""


class TFLLMError(TFLLMInterrupt):
    """The provider failed after its retries (HTTP error, timeout, malformed body)."""


class TFUserNewInputError(TFError):
    """The user sent a new message mid-run; raised at the next safe point, never swallowed."""

    def __init__(self, message: str = "new user input", *, new_input: Any = None) -> None:
        super().__init__(message)
        self.new_input = new_input


class TFBrainError(TFError):
    """The brain stopped abnormally (e.g. timeout); ``result`` holds the partial result."""

    def __init__(self, message: str, *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


__all__ = [
    "CallDepthLimitExceeded",
    "CallLimitExceeded",
    "OperationLimitExceeded",
    "OutputLimitExceeded",
    "PlanCancelled",
    "SizeLimitExceeded",
    "TFBrainError",
    "TFCallError",
    "TFChainError",
    "TFCheckError",
    "TFError",
    "TFInterpreterError",
    "TFLLMError",
    "TFLLMInterrupt",
    "TFLimitError",
    "TFRuntimeError",
    "TFSyntaxError",
    "TFToolError",
    "TFUserNewInputError",
    "TimeLimitExceeded",
]
