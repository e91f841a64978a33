"""Chat LLMs for tests at the provider boundary."""

from __future__ import annotations

from typing import Any

from dcbrain import LLMReply
from dcbrain.llm import ChatLLM, ToolCall


class NoUsageLLM(ChatLLM):
    """A provider that reports no token usage."""

    model = "no-usage"

    def __init__(self, content: str, tool_calls: list[ToolCall] | None = None) -> None:
        self.content = content
        self.tool_calls = tool_calls or []

    async def _achat(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None,
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMReply:
        return LLMReply(content=self.content, tool_calls=self.tool_calls)
