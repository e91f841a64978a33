"""Count the tokens of every LLM call made in a scope, failed chains included.

A chain that fails after calling its LLM returns no :class:`ChainResult`, yet its tokens
were spent; plans and DCChains count usage here, at the LLM boundary, so totals include
them. The collector forwards to the observer that was active before it (budgets, events).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from dcbrain.llm.observe import LLMObserver, llm_observer, notify_call_failed
from dcbrain.usage import Usage, merge_usages

if TYPE_CHECKING:
    from dcbrain.llm.base import ChatLLM, LLMReply


class UsageCollector:
    """An :class:`LLMObserver` that records each call's usage and forwards to ``parent``."""

    def __init__(self, parent: LLMObserver | None = None) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self._usages: list[Usage] = []

    @classmethod
    def under_current(cls) -> UsageCollector:
        """A collector forwarding to the observer of the current context."""
        return cls(llm_observer.get())

    def before_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], max_output_tokens: int
    ) -> None:
        if self.parent is not None:
            self.parent.before_call(llm, messages, max_output_tokens)

    def after_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], reply: LLMReply, duration_s: float
    ) -> None:
        with self._lock:
            self._usages.append(reply.usage)
        if self.parent is not None:
            self.parent.after_call(llm, messages, reply, duration_s)

    def call_failed(self, llm: ChatLLM, messages: list[dict[str, Any]], error: BaseException,
                    duration_s: float) -> None:
        if self.parent is not None:  # the budget above released what it reserved
            notify_call_failed(self.parent, llm, messages, error, duration_s)

    @property
    def total(self) -> Usage:
        """The merged usage of every call recorded so far."""
        with self._lock:
            return merge_usages(self._usages)
