"""The observer hook every LLM call goes through (budgets, events, tracing).

The brain sets :data:`llm_observer` for the duration of a run; every
:meth:`ChatLLM.achat <dcbrain.llm.base.ChatLLM.achat>` in that context calls
``before_call`` (which may raise to stop the call, e.g. :class:`TFLLMInterrupt` when
a token budget would be overrun or :class:`TFUserNewInputError` when the user sent a
new message) and, after a successful reply, ``after_call``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dcbrain.llm.base import ChatLLM, LLMReply


class LLMObserver(Protocol):
    def before_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], max_output_tokens: int
    ) -> None:
        """Called before the request is sent; raise to prevent it."""

    def after_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], reply: LLMReply, duration_s: float
    ) -> None:
        """Called with the reply (and its real usage) after a successful call."""


llm_observer: ContextVar[LLMObserver | None] = ContextVar("llm_observer", default=None)


@contextmanager
def observe_llm_calls(observer: LLMObserver | None) -> Iterator[None]:
    """Set :data:`llm_observer` for the calls made inside the ``with`` block."""
    token = llm_observer.set(observer)
    try:
        yield
    finally:
        llm_observer.reset(token)
