"""Scripted LLM replies with known token usage, so tests can check exact totals."""

from __future__ import annotations

import json
from typing import Any

from dcbrain import LLMReply, Usage


def reply(content: str | dict[str, Any], prompt_tokens: int, completion_tokens: int) -> LLMReply:
    """A scripted reply whose usage is exactly ``prompt_tokens`` + ``completion_tokens``."""
    text = content if isinstance(content, str) else json.dumps(content)
    return LLMReply(content=text, usage=Usage.of_call("test", prompt_tokens, completion_tokens))


def tokens(usage: Usage) -> tuple[int, int, int]:
    """(prompt, completion, requests) of ``usage``."""
    return usage.prompt_tokens, usage.completion_tokens, usage.requests
