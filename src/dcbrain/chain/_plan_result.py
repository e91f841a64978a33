"""What a plan run of a :class:`~dcbrain.chain.TFChainInterpreter` gives its caller: its
value as chain output, and a ChainResult of its sub-chains and call trace (also when it
failed: :func:`partial_chain_result`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dcbrain._jsonsafe import plain, safe_repr
from dcbrain.chain.result import ChainOutput, ChainResult
from dcbrain.tfplan import CallRecord, TFInterpreterError
from dcbrain.usage import Usage

_PREVIEW_CHARS = 200


def plan_chain_result(
    usage: Usage, trace: Sequence[CallRecord], subs: Iterable[ChainResult], value: Any,
    stdout: str,
) -> ChainResult:
    """The plan's ChainResult: its value, every sub-chain's output and the call trace."""
    result = ChainResult(content=as_chain_output(value, stdout), usage=usage)
    result.logs.extend(trace_line(index, record) for index, record in enumerate(trace, start=1))
    for sub in subs:
        result.intermediate_msgs.extend(sub.intermediate_msgs)
        result.tool_returns.extend(sub.tool_returns)
        result.logs.extend(sub.logs)
        if sub.current_generate is not None:
            result.current_generate = sub.current_generate
    return result


def partial_chain_result(error: BaseException) -> ChainResult | None:
    """What a failed :meth:`TFChainInterpreter.evaluate` did before failing (usage, trace)."""
    if not isinstance(error, TFInterpreterError):
        return None
    result = error.partial_result.chain_result
    return result if isinstance(result, ChainResult) else None


def attach_partial(error: BaseException, result: ChainResult) -> None:
    """Hang ``result`` on a plan error that carries none yet."""
    if isinstance(error, TFInterpreterError) and partial_chain_result(error) is None:
        error.partial_result.chain_result = result
        error.partial_result.usage = result.usage.copy()


def as_chain_output(value: Any, stdout: str) -> ChainOutput:
    """A plan's value as chain output: text or a dict (other values as ``{"result": ...}``)."""
    if value is None:
        return stdout
    if isinstance(value, str):
        return value
    data = plain(value)
    if isinstance(data, dict):
        return data
    return {"result": data}


def trace_line(index: int, record: CallRecord) -> str:
    arguments = [_preview(arg) for arg in record.args]
    arguments += [f"{key}={_preview(value)}" for key, value in record.kwargs.items()]
    branch = f" [parallel branch {record.branch}]" if record.branch is not None else ""
    if record.error is not None:
        outcome = f"failed: {record.error}"
    elif callable(record.result):
        outcome = f"-> {record.result!r}"
    else:
        outcome = f"-> {_preview(record.result)}"
    return (f"plan call {index} at {record.line}:{record.col}{branch}: "
            f"{record.name}({', '.join(arguments)}) {outcome} ({record.duration_s:.3f} s)")


def _preview(value: Any) -> str:
    text = safe_repr(value)
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"
