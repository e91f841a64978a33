"""Chat LLMs: one interface, an OpenAI-compatible provider, test LLMs, token counting."""

from dcbrain.llm.base import ChatLLM, LLMReply, ToolCall
from dcbrain.llm.observe import (
    LLMFailureObserver,
    LLMObserver,
    llm_observer,
    observe_llm_calls,
)
from dcbrain.llm.openai import OpenAILLM
from dcbrain.llm.testing import FunctionLLM, LLMCallInfo, ScriptedLLM
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
    "ToolCall",
    "cl100k_base_length",
    "count_message_tokens",
    "llm_observer",
    "observe_llm_calls",
]
