"""Chat LLMs: one interface, an OpenAI-compatible provider, test LLMs, token counting.

:class:`OpenAILLM` is imported on first use: the ``openai`` SDK is slow to import and
most commands never need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports
from dcbrain.llm.base import ChatLLM, LLMReply, ToolCall
from dcbrain.llm.observe import (
    LLMFailureObserver,
    LLMObserver,
    llm_observer,
    observe_llm_calls,
    stream_llm_replies,
)
from dcbrain.llm.testing import FunctionLLM, LLMCallInfo, ScriptedLLM, StreamingScriptedLLM
from dcbrain.llm.tokens import cl100k_base_length, count_message_tokens

__all__ = [
    "ChatLLM",
    "FunctionLLM",
    "LLMCallInfo",
    "LLMFailureObserver",
    "LLMObserver",
    "LLMReply",
    "OpenAILLM",
    "ScriptedLLM",
    "StreamingScriptedLLM",
    "ToolCall",
    "cl100k_base_length",
    "count_message_tokens",
    "llm_observer",
    "observe_llm_calls",
    "stream_llm_replies",
]

if TYPE_CHECKING:
    from dcbrain.llm.openai import OpenAILLM

__getattr__, __dir__ = lazy_exports(__name__, {"OpenAILLM": "dcbrain.llm.openai"})
