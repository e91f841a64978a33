"""tf_plan: the plan language of dcbrain — a safe subset of Python, checked and sandboxed.

``parse`` validates a script, ``check`` reports static problems against the chains and
tools a plan may call, and :class:`Interpreter` runs it under :class:`Limits`.
"""

from dcbrain.tfplan.checker import CallableSpec, check
from dcbrain.tfplan.errors import (
    CallDepthLimitExceeded,
    CallLimitExceeded,
    OperationLimitExceeded,
    OutputLimitExceeded,
    PlanCancelled,
    PlanProcessCrashed,
    Problem,
    SizeLimitExceeded,
    TFCallError,
    TFCheckError,
    TFInterpreterError,
    TFLimitError,
    TFRuntimeError,
    TFSyntaxError,
    TimeLimitExceeded,
)
from dcbrain.tfplan.interpreter import Interpreter, compile_source
from dcbrain.tfplan.language import language_summary
from dcbrain.tfplan.limits import Limits
from dcbrain.tfplan.parser import Plan, extract_plan, parse
from dcbrain.tfplan.result import CallRecord, ConsoleResult
from dcbrain.tfplan.state import CallObserver, ParallelHooks

__all__ = [
    "CallDepthLimitExceeded",
    "CallLimitExceeded",
    "CallObserver",
    "CallRecord",
    "CallableSpec",
    "ConsoleResult",
    "Interpreter",
    "Limits",
    "OperationLimitExceeded",
    "OutputLimitExceeded",
    "ParallelHooks",
    "Plan",
    "PlanCancelled",
    "PlanProcessCrashed",
    "Problem",
    "SizeLimitExceeded",
    "TFCallError",
    "TFCheckError",
    "TFInterpreterError",
    "TFLimitError",
    "TFRuntimeError",
    "TFSyntaxError",
    "TimeLimitExceeded",
    "check",
    "compile_source",
    "extract_plan",
    "language_summary",
    "parse",
]
