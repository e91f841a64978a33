"""What a plan run of a :class:`~dcbrain.chain.TFChainInterpreter` gives its caller: the
interpreter's result with a ChainResult of its value, sub-chains and call trace (also when
it failed: :func:`partial_chain_result`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from dcbrain.chain.result import ChainOutput, ChainResult
from dcbrain.tfplan import CallRecord, ConsoleResult, TFInterpreterError
from dcbrain.usage import Usage
from dcbrain.values.jsonsafe import plain, safe_repr

_PREVIEW_CHARS = 200


class _MadeWhenRead:
    """The ``chain_result`` field: given as a :class:`ChainResult` or as a function making
    it, called when the field is first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = f"_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> ChainResult:
        if instance is None:
            raise AttributeError(self._name)  # no default: the field is required
        made = instance.__dict__[self._name]
        if not isinstance(made, ChainResult):
            made = instance.__dict__[self._name] = made()
        return made  # type: ignore[no-any-return]

    def __set__(self, instance: Any, value: ChainResult | Callable[[], ChainResult]) -> None:
        instance.__dict__[self._name] = value


@dataclass(kw_only=True)
class ChainConsoleResult(ConsoleResult):
    """A plan run's result with what its chains did: ``chain_result`` (the plan's value as
    chain output, its sub-chains' messages and logs, the usage of every LLM call) and
    ``reused_calls``, how many of its calls the run journal answered. A run's chain result
    is written when first read (a brain reads the value, output and trace only)."""

    chain_result: _MadeWhenRead = _MadeWhenRead()
    reused_calls: int = 0

    @classmethod
    def of(cls, console: ConsoleResult, chain_result: ChainResult,
           reused_calls: int) -> ChainConsoleResult:
        """``console`` with ``chain_result``; its usage is the chain result's."""
        values = {name: getattr(console, name) for name in _CONSOLE_FIELDS}
        values["usage"] = chain_result.usage.copy()
        return cls(**values, chain_result=chain_result, reused_calls=reused_calls)

    @classmethod
    def of_plan(cls, console: ConsoleResult, usage: Usage, subs: Iterable[ChainResult],
                reused_calls: int, *, failed: Sequence[CallRecord] | None = None
                ) -> ChainConsoleResult:
        """``console`` with the :func:`plan_chain_result` of its trace, value and output
        (of the ``failed`` run's trace alone), ``usage`` and ``subs`` (its sub-chains'
        results, taken now): made when first read."""
        values = {name: getattr(console, name) for name in _CONSOLE_FIELDS}
        values["usage"] = usage.copy()
        made = partial(plan_chain_result, usage, console.trace, list(subs), console.value,
                       console.stdout) if failed is None \
            else partial(plan_chain_result, usage, failed, list(subs), None, "")
        return cls(**values, chain_result=made, reused_calls=reused_calls)


_CONSOLE_FIELDS = tuple(item.name for item in fields(ConsoleResult))


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
    partial = error.partial_result
    return partial.chain_result if isinstance(partial, ChainConsoleResult) else None


def attach_partial(error: BaseException, usage: Usage, subs: Iterable[ChainResult],
                   reused_calls: int) -> None:
    """Hang what the failed run did (``usage``, ``subs``, the error's trace) on a plan
    error that carries none yet."""
    if isinstance(error, TFInterpreterError) \
            and not isinstance(error.partial_result, ChainConsoleResult):
        error.partial_result = ChainConsoleResult.of_plan(
            error.partial_result, usage, subs, reused_calls,
            failed=getattr(error, "trace", []))


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
