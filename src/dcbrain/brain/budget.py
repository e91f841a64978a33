"""The token budget of a run, enforced before every LLM call.

:class:`TokenBudget` is the run's LLM observer (:mod:`dcbrain.llm.observe`): every
``ChatLLM.achat`` in the run's context — the planner, the validator and every chain a
plan calls, in any thread — passes through ``before_call``, which reserves the call's
projected size (the counted prompt plus the call's maximum output) and refuses the call
with :class:`~dcbrain.exceptions.TFTokenBudgetExceeded` when that could overrun
``max_tokens``. ``after_call`` replaces the reservation with the reply's real usage
(counted with ``cl100k_base`` when the provider reported none); ``call_failed`` gives back
the reservation of a call that raised or was cancelled and closes its ``call_started``
with a ``call_finished`` carrying the error. So the tokens spent never exceed the budget
as long as a provider's reported usage stays within the projection (a real API may add a
few tokens of framing for tool or schema definitions that the prompt count cannot see).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from dcbrain.events import (
    Budget,
    CallStatus,
    EventData,
    LLMCallFinished,
    LLMCallStarted,
    LLMPhase,
)
from dcbrain.exceptions import TFTokenBudgetExceeded
from dcbrain.llm.base import reply_tokens
from dcbrain.llm.observe import notify_call_failed
from dcbrain.llm.tokens import count_message_tokens
from dcbrain.usage import Usage

if TYPE_CHECKING:
    from dcbrain.llm.base import ChatLLM, LLMReply
    from dcbrain.llm.observe import LLMObserver

#: Which part of the run an LLM call belongs to: ``plan``, ``validate`` or ``run``.
llm_phase: ContextVar[LLMPhase] = ContextVar("dcbrain_brain_llm_phase", default="run")

Emit = Callable[..., Any]


class TokenBudget:
    """Counts and limits the tokens of every LLM call of one run (thread-safe).

    ``emit(payload)`` receives ``call_started``/``call_finished`` events for LLM
    calls and a ``budget`` event after each call or refusal. ``parent`` is the observer
    that was active when the run started (an enclosing run); it sees every call too.
    """

    def __init__(
        self,
        max_tokens: int,
        *,
        emit: Emit | None = None,
        parent: LLMObserver | None = None,
        max_iterations: int | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.usage = Usage()
        self.exhausted: TFTokenBudgetExceeded | None = None
        self.iterations_used = 0
        self.max_iterations = max_iterations
        self._emit = emit
        self._parent = parent
        self._lock = threading.Lock()
        self._reserved = 0
        # per message list: each call in flight, its reservation and perf_counter() start
        self._pending: dict[int, list[tuple[LLMCallStarted, int, float]]] = {}
        self._closed: set[str] = set()
        self._calls = 0

    @property
    def used(self) -> int:
        """Tokens spent by finished calls."""
        return self.usage.total_tokens

    @property
    def remaining(self) -> int:
        """Tokens left for new calls (calls in flight hold their reservation)."""
        with self._lock:
            return max(self.max_tokens - self.usage.total_tokens - self._reserved, 0)

    def before_call(
        self, llm: ChatLLM, messages: list[dict[str, Any]], max_output_tokens: int
    ) -> None:
        if self._parent is not None:
            self._parent.before_call(llm, messages, max_output_tokens)
        prompt_tokens = count_message_tokens(messages)
        projected = prompt_tokens + max_output_tokens
        phase = llm_phase.get()
        with self._lock:
            used = self.usage.total_tokens
            refusal: str | None = None
            if used + self._reserved + projected > self.max_tokens:
                refusal = (
                    f"token budget exhausted: this LLM call may use {projected} tokens "
                    f"({prompt_tokens} prompt + {max_output_tokens} max output) but only "
                    f"{max(self.max_tokens - used - self._reserved, 0)} of "
                    f"{self.max_tokens} are left")
                if self.exhausted is None:
                    # its own copy, never raised: one holding a traceback would hold the
                    # frames of this call, which hold this budget (a cycle)
                    self.exhausted = self._exceeded(refusal, used, projected)
            else:
                self._reserved += projected
                self._calls += 1
                started = LLMCallStarted(
                    call_id=f"llm-{self._calls}",
                    name=_model_name(llm),
                    model=getattr(llm, "model", ""),
                    phase=phase,
                    prompt_tokens=prompt_tokens,
                    max_output_tokens=max_output_tokens,
                )
                self._pending.setdefault(id(messages), []).append(
                    (started, projected, time.perf_counter())
                )
        if refusal is not None:
            self._budget_event(exhausted=True, requested=projected, phase=phase)
            raise self._exceeded(refusal, used, projected)
        self._event(started)

    def _exceeded(self, message: str, used: int, requested: int) -> TFTokenBudgetExceeded:
        return TFTokenBudgetExceeded(message, requested=requested, used=used,
                                     limit=self.max_tokens)

    def after_call(
        self,
        llm: ChatLLM,
        messages: list[dict[str, Any]],
        reply: LLMReply,
        duration_s: float,
    ) -> None:
        usage = reply.usage
        with self._lock:  # the reservation becomes the real usage at once
            started = self._take(llm, messages)
            if usage.requests == 0:  # no usage reported (achat counts it; direct callers may not)
                usage = Usage.of_call(
                    reply.model or started.model,
                    started.prompt_tokens or count_message_tokens(messages),
                    reply_tokens(reply),
                )
            self.usage += usage
        self._finish_event(LLMCallFinished(
            call_id=started.call_id,
            name=started.name,
            status="ok",
            model=reply.model or started.model,
            phase=started.phase,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            duration_s=duration_s,
            finish_reason=reply.finish_reason,
        ))
        self._budget_event(exhausted=False, phase=llm_phase.get())
        if self._parent is not None:
            self._parent.after_call(llm, messages, reply, duration_s)

    def call_failed(self, llm: ChatLLM, messages: list[dict[str, Any]], error: BaseException,
                    duration_s: float) -> None:
        """Give back the reservation of a call that raised or was cancelled, and close it."""
        with self._lock:
            started = self._take(llm, messages)
        phase = started.phase
        status: CallStatus = "aborted" if isinstance(error, asyncio.CancelledError) else "error"
        self._finish_event(started.closed(status, f"{type(error).__name__}: {error}",
                                          duration_s))
        self._budget_event(exhausted=False, phase=phase)
        if self._parent is not None:
            notify_call_failed(self._parent, llm, messages, error, duration_s)

    def snapshot(self) -> dict[str, Any]:
        """Budget figures for events and planning prompts."""
        with self._lock:
            used = self.usage.total_tokens
            left = max(self.max_tokens - used - self._reserved, 0)
        data: dict[str, Any] = {"tokens_used": used, "tokens_left": left,
                                "max_tokens": self.max_tokens}
        if self.max_iterations is not None:
            data["iterations_used"] = self.iterations_used
            data["iterations_left"] = max(self.max_iterations - self.iterations_used, 0)
            data["max_iterations"] = self.max_iterations
        return data

    def close_open(self, status: CallStatus) -> None:
        """End every LLM call still in flight with ``status`` (the run stopped first)."""
        with self._lock:
            still_open = [entry for entries in self._pending.values() for entry in entries]
        for started, _, began in still_open:
            with self._lock:
                if started.call_id in self._closed:
                    continue
                self._closed.add(started.call_id)
            self._event(started.closed(status, f"the run stopped ({status})",
                                       time.perf_counter() - began))

    def _take(self, llm: ChatLLM, messages: list[dict[str, Any]]) -> LLMCallStarted:
        """The oldest call in flight with ``messages``, its reservation given back (called
        with the lock held)."""
        entries = self._pending.get(id(messages))
        if entries:
            started, projected, _ = entries.pop(0)
            if not entries:
                del self._pending[id(messages)]
            self._reserved -= projected
            return started
        # a call this budget never let through (its observer was set mid-call)
        return LLMCallStarted(call_id="llm-?", name=_model_name(llm),
                              model=getattr(llm, "model", ""), phase=llm_phase.get(),
                              prompt_tokens=0, max_output_tokens=0)

    def _budget_event(self, *, exhausted: bool, phase: str, requested: int | None = None) -> None:
        data = self.snapshot()
        if exhausted:
            data.update(budget="max_tokens", exhausted=True, requested=requested)
        else:
            data["exhausted"] = False
        self._event(Budget(phase=phase, **data))

    def _finish_event(self, payload: LLMCallFinished) -> None:
        with self._lock:
            if payload.call_id in self._closed:  # already closed when the run stopped
                return
        self._event(payload)

    def _event(self, payload: EventData) -> None:
        if self._emit is not None:
            self._emit(payload)


def _model_name(llm: ChatLLM) -> str:
    return str(getattr(llm, "model", "") or type(llm).__name__)
