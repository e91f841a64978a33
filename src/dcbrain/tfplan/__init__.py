"""tf_plan: the plan language of dcbrain — a safe subset of Python, checked and sandboxed.

``parse`` validates a script, ``check`` reports static problems against the chains and
tools a plan may call, and :class:`Interpreter` runs it under :class:`Limits`.

Each name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.tfplan.checker import CallableSpec, check
    from dcbrain.tfplan.errors import (
        BranchLimitExceeded,
        CallDepthLimitExceeded,
        CallLimitExceeded,
        OperationLimitExceeded,
        OutputLimitExceeded,
        PlanCancelled,
        PlanProcessCrashed,
        Problem,
        SizeLimitExceeded,
        TFApprovalDenied,
        TFCallError,
        TFCheckError,
        TFInterpreterError,
        TFLimitError,
        TFPolicyDenied,
        TFRuntimeError,
        TFSyntaxError,
        TFToolTimeout,
        TFToolUnavailable,
        TimeLimitExceeded,
    )
    from dcbrain.tfplan.host import call_may_finish
    from dcbrain.tfplan.interpreter import Interpreter, compile_source
    from dcbrain.tfplan.language import language_summary
    from dcbrain.tfplan.limits import Limits
    from dcbrain.tfplan.parser import Plan, extract_plan, parse
    from dcbrain.tfplan.result import CallRecord, ConsoleResult
    from dcbrain.tfplan.state import CallObserver, ParallelHooks

__all__ = [
    "BranchLimitExceeded",
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
    "call_may_finish",
    "check",
    "compile_source",
    "extract_plan",
    "language_summary",
    "parse",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BranchLimitExceeded": "dcbrain.tfplan.errors",
    "CallDepthLimitExceeded": "dcbrain.tfplan.errors",
    "CallLimitExceeded": "dcbrain.tfplan.errors",
    "CallObserver": "dcbrain.tfplan.state",
    "CallRecord": "dcbrain.tfplan.result",
    "CallableSpec": "dcbrain.tfplan.checker",
    "ConsoleResult": "dcbrain.tfplan.result",
    "Interpreter": "dcbrain.tfplan.interpreter",
    "Limits": "dcbrain.tfplan.limits",
    "OperationLimitExceeded": "dcbrain.tfplan.errors",
    "OutputLimitExceeded": "dcbrain.tfplan.errors",
    "ParallelHooks": "dcbrain.tfplan.state",
    "Plan": "dcbrain.tfplan.parser",
    "PlanCancelled": "dcbrain.tfplan.errors",
    "PlanProcessCrashed": "dcbrain.tfplan.errors",
    "Problem": "dcbrain.tfplan.errors",
    "SizeLimitExceeded": "dcbrain.tfplan.errors",
    "TFApprovalDenied": "dcbrain.tfplan.errors",
    "TFCallError": "dcbrain.tfplan.errors",
    "TFCheckError": "dcbrain.tfplan.errors",
    "TFInterpreterError": "dcbrain.tfplan.errors",
    "TFLimitError": "dcbrain.tfplan.errors",
    "TFPolicyDenied": "dcbrain.tfplan.errors",
    "TFRuntimeError": "dcbrain.tfplan.errors",
    "TFSyntaxError": "dcbrain.tfplan.errors",
    "TFToolTimeout": "dcbrain.tfplan.errors",
    "TFToolUnavailable": "dcbrain.tfplan.errors",
    "TimeLimitExceeded": "dcbrain.tfplan.errors",
    "call_may_finish": "dcbrain.tfplan.host",
    "check": "dcbrain.tfplan.checker",
    "compile_source": "dcbrain.tfplan.interpreter",
    "extract_plan": "dcbrain.tfplan.parser",
    "language_summary": "dcbrain.tfplan.language",
    "parse": "dcbrain.tfplan.parser",
})
