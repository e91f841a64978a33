"""The one chat-LLM interface every provider implements, and the reply it returns."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from dcbrain._sync import run_sync
from dcbrain.llm.observe import llm_observer, llm_reply_stream, notify_call_failed
from dcbrain.llm.tokens import cl100k_base_length, count_message_tokens
from dcbrain.usage import Usage
from dcbrain.values.jsonsafe import dumps

DEFAULT_MAX_OUTPUT_TOKENS = 4096


@dataclass
class ToolCall:
    """A function call the LLM asked for; ``arguments`` is the decoded JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": dumps(self.arguments),
            },
        }


@dataclass
class LLMReply:
    """One reply of a chat LLM.

    ``parsed`` is the decoded JSON of ``content`` when the call asked for structured
    output and the content is valid JSON, else ``None``.
    """

    content: str
    parsed: Any | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation (OpenAI format)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


class ChatLLM(ABC):
    """A chat model. Subclasses implement :meth:`_achat`; callers use :meth:`achat`/:meth:`chat`.

    ``achat`` does the work shared by all providers: it notifies the observer set in
    :data:`dcbrain.llm.observe.llm_observer` (budgets, events) before and after the call
    (and, when it has ``call_failed``, of a call that raised or was cancelled), counts the
    usage with ``cl100k_base`` when the provider reported none, and decodes JSON content
    when structured output was requested.

    A provider that can stream sets ``stream`` and implements :meth:`_astream`; ``achat``
    then streams when someone listens for the reply's text (its ``on_delta``, or
    :func:`~dcbrain.llm.observe.stream_llm_replies` around the call) and returns the whole
    reply all the same.
    """

    model: str
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    #: Whether calls stream their reply when its text is listened for.
    stream: bool = False

    def warm_up(self) -> None:  # noqa: B027 - optional: most providers load nothing lazily
        """Load what the first call would load lazily (a worker calls it before its first run)."""

    async def achat(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> LLMReply:
        """Send ``messages`` and return the reply.

        ``json_schema`` asks for a JSON reply matching the schema; ``tools`` are OpenAI
        ``tools=[...]`` entries the model may call instead of answering. ``on_delta``
        receives the reply's text chunk by chunk as it arrives, when the LLM streams
        (``stream``); the chunks add up to the reply's ``content``.
        """
        observer = llm_observer.get()
        if observer is not None:
            budget = max_tokens if max_tokens is not None else self.max_output_tokens
            observer.before_call(self, messages, budget)
        if on_delta is None and self.stream:
            open_reply = llm_reply_stream.get()
            on_delta = open_reply() if open_reply is not None else None
        started = time.perf_counter()
        try:
            provider_call = (partial(self._astream, on_delta=on_delta)
                             if on_delta is not None and self.stream else self._achat)
            reply = await provider_call(messages, json_schema=json_schema, tools=tools,
                                        max_tokens=max_tokens, temperature=temperature)
        except BaseException as exc:  # cancellation too: the reservation must be released
            if observer is not None:
                notify_call_failed(observer, self, messages, exc, time.perf_counter() - started)
            raise
        duration_s = time.perf_counter() - started
        if reply.usage.requests == 0:  # the provider reported no usage: count it
            usage = Usage.of_call(
                reply.model or self.model, count_message_tokens(messages), reply_tokens(reply)
            )
            reply = replace(reply, usage=usage)
        if json_schema is not None and reply.parsed is None and not reply.tool_calls:
            reply = replace(reply, parsed=_decode_json(reply.content))
        if observer is not None:
            observer.after_call(self, messages, reply, duration_s)
        return reply

    def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMReply:
        """Blocking :meth:`achat`; usable with or without a running event loop."""
        return run_sync(lambda: self.achat(messages, **kwargs))

    @abstractmethod
    async def _achat(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                     tools: list[dict[str, Any]] | None, max_tokens: int | None,
                     temperature: float | None) -> LLMReply:
        """Make the provider call. Raise :class:`TFLLMError` on provider failure."""

    async def _astream(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                       tools: list[dict[str, Any]] | None, max_tokens: int | None,
                       temperature: float | None, on_delta: Callable[[str], None]) -> LLMReply:
        """Make the provider call streaming: ``on_delta`` with each chunk of the reply's
        text as it arrives, then the whole reply. A provider that sets ``stream``
        overrides it; this one sends the whole text as one chunk."""
        reply = await self._achat(messages, json_schema=json_schema, tools=tools,
                                  max_tokens=max_tokens, temperature=temperature)
        if reply.content:
            on_delta(reply.content)
        return reply

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r})"


def reply_tokens(reply: LLMReply) -> int:
    """The ``cl100k_base`` tokens of a reply: its text plus the names and arguments of its
    tool calls (how usage is counted when a provider reports none)."""
    return cl100k_base_length(reply.content) + sum(
        cl100k_base_length(call.name + json.dumps(call.arguments)) for call in reply.tool_calls
    )


def _decode_json(content: str) -> Any | None:
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return None
