"""Running a plan: check it, run it, and announce how it finished (``plan_finished``).

A recoverable error of the run (``TFLLMInterrupt``, ``TFInterpreterError``,
``TFChainError``) becomes the attempt's ``interpreter_err``: no validation, and the
error reaches the next planning. Anything else, a spent token budget included, leaves.
A plan that ended with ``replan_with(value)`` is noted on the attempt (``replanning``):
the value goes to the next planning, not to the validator.
"""

from __future__ import annotations

import time
import traceback

from dcbrain.brain.context import BrainIntermediateResult
from dcbrain.brain.control import RunControl
from dcbrain.brain.trace import RunRecorder
from dcbrain.chain import TFChainInterpreter
from dcbrain.events import PlanFinished, clip
from dcbrain.exceptions import (
    ApprovalRequired,
    TFChainError,
    TFLLMInterrupt,
    TFTokenBudgetExceeded,
)
from dcbrain.tfplan.builtins import requested_replan
from dcbrain.tfplan.errors import TFInterpreterError

#: Errors of a plan run the brain recovers from by replanning.
RECOVERABLE_ERRORS: tuple[type[Exception], ...] = (TFLLMInterrupt, TFInterpreterError, TFChainError)


async def run_plan(
    ir: BrainIntermediateResult,
    interpreter: TFChainInterpreter,
    recorder: RunRecorder,
    control: RunControl,
) -> None:
    """Run ``ir.current_plan``; its result or its recoverable error lands on ``ir``
    (neither, when it stopped at calls waiting for approval)."""
    assert ir.current_plan is not None
    started = time.perf_counter()
    try:
        result = await control.interruptible("run", interpreter.aevaluate(ir.current_plan))
    except ApprovalRequired:
        return  # it runs again once its calls are decided: no result, no error yet
    except TFTokenBudgetExceeded:
        raise  # an LLM interrupt, but no replanning helps when the budget is spent
    except RECOVERABLE_ERRORS as exc:
        # kept on the attempt: without this frame (its locals hold the attempt) and
        # without the locals of those below it
        forget_frames(exc.with_traceback(exc.__traceback__.tb_next
                                         if exc.__traceback__ is not None else None))
        ir.interpreter_err = exc
        ir.last_error = str(exc)
        problems = getattr(exc, "problems", None)
        recorder.emit(PlanFinished(
            iteration=ir.iterations,
            ok=False,
            error=str(exc),
            error_kind=getattr(exc, "kind", type(exc).__name__),
            problems=[str(problem) for problem in problems] if problems else [],
            stdout=getattr(exc, "stdout", ""),
            duration_s=time.perf_counter() - started,
        ))
        return
    ir.current_result = result
    ir.last_result = result.value
    ir.last_error = None
    replan, value = requested_replan(ir.current_plan, result.value)
    if replan:  # a look before acting: the planner gets the value, the validator nothing
        ir.replanning = True
        ir.looked_up.append({"plan": ir.current_plan, "value": value,
                             "calls": list(dict.fromkeys(call.name for call in result.trace)),
                             "iteration": ir.iterations})
    recorder.emit(PlanFinished(
        iteration=ir.iterations,
        ok=True,
        result=clip(result.value),
        stdout=result.stdout[-2000:],
        calls=len(result.trace),
        reused_calls=result.reused_calls,
        duration_s=time.perf_counter() - started,
    ))


def forget_frames(error: BaseException) -> None:
    """Clear the local variables of the finished frames in ``error``'s traceback and in
    those of the errors it came from (kept as the attempt's error, it is still printed
    the same way). Those frames hold the plan run — its interpreter, its state, often
    the error itself — so a kept error would keep all of that, and then leave it to
    Python's cyclic collector."""
    seen: set[int] = set()
    pending: BaseException | None = error
    while pending is not None and id(pending) not in seen:
        seen.add(id(pending))
        traceback.clear_frames(pending.__traceback__)
        pending = pending.__cause__ or pending.__context__
