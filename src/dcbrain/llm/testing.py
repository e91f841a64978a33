"""LLMs for tests and offline demos: replay scripted replies or compute them with a function.

:class:`FunctionPlanner` and :class:`ScriptedPlanner` stand for a brain's planner
instead: they get the typed planning context, not the prompt text.

Both LLMs count usage with ``cl100k_base`` (prompt = the counted messages, completion = the
counted reply) so token budgets behave as with a real provider, and both record what
they received: ``calls`` holds the messages of every call, ``requests`` the full
requests (messages and options).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from dcbrain.exceptions import TFScriptExhaustedError
from dcbrain.llm._test_planners import FunctionPlanner as FunctionPlanner
from dcbrain.llm._test_planners import ScriptedPlanner as ScriptedPlanner
from dcbrain.llm._test_planners import tf_plan as tf_plan
from dcbrain.llm.base import ChatLLM, LLMReply, ToolCall, reply_tokens
from dcbrain.llm.tokens import cl100k_base, count_message_tokens
from dcbrain.usage import Usage

ScriptEntry: TypeAlias = str | dict[str, Any] | LLMReply | ToolCall | list[ToolCall] | BaseException
"""A scripted reply: text, a JSON object, a full reply, tool call(s), or an error to raise."""

FunctionResult: TypeAlias = str | dict[str, Any] | LLMReply | ToolCall | list[ToolCall]


@dataclass
class LLMCallInfo:
    """What one call to a test LLM received."""

    messages: list[dict[str, Any]]
    json_schema: dict[str, Any] | None
    tools: list[dict[str, Any]] | None
    max_tokens: int | None
    temperature: float | None
    index: int


class _RecordingLLM(ChatLLM):
    def __init__(self, model: str, max_output_tokens: int) -> None:
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.calls: list[list[dict[str, Any]]] = []
        self.requests: list[LLMCallInfo] = []

    def _record(self, messages: list[dict[str, Any]], json_schema: dict[str, Any] | None,
                tools: list[dict[str, Any]] | None, max_tokens: int | None,
                temperature: float | None) -> LLMCallInfo:
        snapshot = copy.deepcopy(messages)
        info = LLMCallInfo(
            snapshot,
            copy.deepcopy(json_schema),
            copy.deepcopy(tools),
            max_tokens,
            temperature,
            len(self.calls),
        )
        self.calls.append(snapshot)
        self.requests.append(info)
        return info

    async def _achat(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                     tools: list[dict[str, Any]] | None, max_tokens: int | None,
                     temperature: float | None) -> LLMReply:
        info = self._record(messages, json_schema, tools, max_tokens, temperature)
        reply = _as_reply(await self._answer(messages, info), self.model)
        if reply.usage.requests == 0:
            usage = Usage.of_call(reply.model, count_message_tokens(messages),
                                  reply_tokens(reply))
            reply = replace(reply, usage=usage)
        return reply

    @abstractmethod
    async def _answer(self, messages: list[dict[str, Any]], info: LLMCallInfo) -> FunctionResult:
        """What the call replies (a reply or what stands for one), or raises."""


class ScriptedLLM(_RecordingLLM):
    """Replays ``replies`` in order, one per call.

    An entry is the reply text, a dict (a JSON reply), an :class:`LLMReply`, a
    :class:`ToolCall` or a list of them (the model calls tools), or an exception to
    raise. A call after the last entry raises :class:`TFScriptExhaustedError`.
    """

    def __init__(
        self,
        replies: Iterable[ScriptEntry],
        *,
        model: str = "scripted",
        max_output_tokens: int = 4096,
    ) -> None:
        super().__init__(model, max_output_tokens)
        self.replies: list[ScriptEntry] = list(replies)

    @property
    def remaining(self) -> int:
        """Replies not used yet."""
        return len(self.replies) - len(self.calls)

    async def _answer(self, messages: list[dict[str, Any]], info: LLMCallInfo) -> FunctionResult:
        index = info.index
        if index >= len(self.replies):
            last = _last_text(messages)
            raise TFScriptExhaustedError(
                f"ScriptedLLM {self.model!r} has no reply for call #{index + 1}: all "
                f"{len(self.replies)} scripted replies were used (last message: {last!r})"
            )
        entry = self.replies[index]
        if isinstance(entry, BaseException):
            raise entry
        return entry


class FunctionLLM(_RecordingLLM):
    """Computes each reply with ``function(messages)``.

    The function may be sync or async, and may take an ``info`` keyword argument
    (an :class:`LLMCallInfo` with the options and the call index). It returns what a
    :class:`ScriptedLLM` entry may be (text, dict, reply, tool calls) or raises.
    """

    def __init__(
        self,
        function: Callable[..., FunctionResult | Awaitable[FunctionResult]],
        *,
        model: str = "function",
        max_output_tokens: int = 4096,
    ) -> None:
        super().__init__(model, max_output_tokens)
        self.function = function
        self._wants_info = _accepts_info(function)

    async def _answer(self, messages: list[dict[str, Any]], info: LLMCallInfo) -> FunctionResult:
        arguments = copy.deepcopy(messages)
        if self._wants_info:
            value = self.function(arguments, info=info)
        else:
            value = self.function(arguments)
        if inspect.isawaitable(value):
            value = await value
        return value


def _as_reply(value: Any, model: str) -> LLMReply:
    if isinstance(value, LLMReply):
        return value if value.model else replace(value, model=model)
    if isinstance(value, str):
        return LLMReply(content=value, finish_reason="stop", model=model)
    if isinstance(value, dict):
        return LLMReply(
            content=json.dumps(value, ensure_ascii=False),
            parsed=value,
            finish_reason="stop",
            model=model,
        )
    if isinstance(value, ToolCall):
        value = [value]
    if isinstance(value, list) and all(isinstance(item, ToolCall) for item in value):
        return LLMReply(content="", finish_reason="tool_calls", model=model, tool_calls=value)
    raise TypeError(
        f"a test LLM reply must be str, dict, LLMReply, ToolCall or list[ToolCall], "
        f"got {type(value).__name__}"
    )


def _accepts_info(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "info" in parameters or any(
        parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()
    )


def _last_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        content = message.get("content")
        if isinstance(content, str) and content:
            return content[:200]
    return ""


class StreamingScriptedLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` that streams: a reply's text arrives one ``cl100k_base``
    token at a time (``tokens_per_second`` paces them; ``None``: as fast as the loop
    goes), as a real provider's stream would, when the call's text is listened for
    (``achat(on_delta=...)`` or a run showing its plan as it is written)."""

    stream = True

    def __init__(
        self,
        replies: Iterable[ScriptEntry],
        *,
        tokens_per_second: float | None = None,
        model: str = "scripted-stream",
        max_output_tokens: int = 4096,
    ) -> None:
        super().__init__(replies, model=model, max_output_tokens=max_output_tokens)
        if tokens_per_second is not None and tokens_per_second <= 0:
            raise ValueError(f"tokens_per_second must be positive, got {tokens_per_second}")
        self.tokens_per_second = tokens_per_second

    async def _astream(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                       tools: list[dict[str, Any]] | None, max_tokens: int | None,
                       temperature: float | None, on_delta: Callable[[str], None]) -> LLMReply:
        reply = await self._achat(messages, json_schema=json_schema, tools=tools,
                                  max_tokens=max_tokens, temperature=temperature)
        pause = 0.0 if self.tokens_per_second is None else 1.0 / self.tokens_per_second
        for piece in token_pieces(reply.content):
            await asyncio.sleep(pause)
            on_delta(piece)
        return reply


def token_pieces(text: str) -> list[str]:
    """``text`` cut at its ``cl100k_base`` token boundaries (pieces that add up to it)."""
    if not text:
        return []
    encoding = cl100k_base()
    pieces: list[str] = []
    pending = b""
    for token in encoding.encode(text, disallowed_special=()):
        pending += encoding.decode_single_token_bytes(token)
        try:
            pieces.append(pending.decode("utf-8"))
        except UnicodeDecodeError:  # a character split across tokens: wait for its end
            continue
        pending = b""
    if pending:
        pieces.append(pending.decode("utf-8", errors="replace"))
    return pieces
