"""The observer hook every LLM call goes through (budgets, events, tracing).

The brain sets :data:`llm_observer` for the duration of a run; every
:meth:`ChatLLM.achat <dcbrain.llm.base.ChatLLM.achat>` in that context calls
``before_call`` (which may raise to stop the call, e.g. :class:`TFLLMInterrupt` when
a token budget would be overrun or :class:`TFUserNewInputError` when the user sent a
new message) and, after a successful reply, ``after_call``. An observer may also define
``call_failed`` (see :class:`LLMFailureObserver`): it is then told about every call that
raised or was cancelled after ``before_call`` let it through, so it can give back what it
reserved and close what it opened.

:data:`llm_reply_stream` says where the text of streamed replies goes: set (with
:func:`stream_llm_replies`) to a function that, for each call of an LLM that streams
(``ChatLLM.stream``), returns the callback that receives that reply's text chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

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


@runtime_checkable
class LLMFailureObserver(Protocol):
    """The optional hook of an :class:`LLMObserver` for calls that did not return a reply."""

    def call_failed(self, llm: ChatLLM, messages: list[dict[str, Any]], error: BaseException,
                    duration_s: float) -> None:
        """Called when the provider call raised ``error`` (or was cancelled); no usage."""


def notify_call_failed(observer: LLMObserver, llm: ChatLLM, messages: list[dict[str, Any]],
                       error: BaseException, duration_s: float) -> None:
    """Tell ``observer`` that a call it let through failed, if it wants to know."""
    if isinstance(observer, LLMFailureObserver):
        observer.call_failed(llm, messages, error, duration_s)


llm_observer: ContextVar[LLMObserver | None] = ContextVar("llm_observer", default=None)


@contextmanager
def observe_llm_calls(observer: LLMObserver | None) -> Iterator[None]:
    """Set :data:`llm_observer` for the calls made inside the ``with`` block."""
    token = llm_observer.set(observer)
    try:
        yield
    finally:
        llm_observer.reset(token)


#: For each LLM call that streams its reply, the callback its text chunks go to.
ReplyStream = Callable[[], Callable[[str], None]]

llm_reply_stream: ContextVar[ReplyStream | None] = ContextVar("llm_reply_stream", default=None)


@contextmanager
def stream_llm_replies(open_reply: ReplyStream | None) -> Iterator[None]:
    """Stream the replies of the LLM calls made inside the ``with`` block: each call of an
    LLM that streams calls ``open_reply()`` once and gives the callback it returns the
    reply's text as it arrives."""
    token = llm_reply_stream.set(open_reply)
    try:
        yield
    finally:
        llm_reply_stream.reset(token)
