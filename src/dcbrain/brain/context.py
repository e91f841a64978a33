"""What a brain run works on and what it returns.

``BrainContext`` is the input side of one run (``brain_ctx`` in the lifecycle callbacks),
``BrainIntermediateResult`` the state the lifecycle callbacks read and write, and
``BrainResult`` what the caller gets back on every stop.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dcbrain.messages import TextMessage
from dcbrain.usage import Usage
from dcbrain.values.jsonsafe import dumps, plain

if TYPE_CHECKING:
    from dcbrain.approvals import ApprovalRequest
    from dcbrain.brain.deps import AttemptStore
    from dcbrain.memory import Recall
    from dcbrain.tfplan import ConsoleResult
    from dcbrain.tools import Tool

BrainStatus = Literal["succeeded", "failed", "aborted", "waiting"]
BrainReason = Literal[
    "validated", "direct_answer", "max_iterations", "max_tokens", "timeout", "aborted",
    "repeated_plan", "error", "approval",
]

logger = logging.getLogger("dcbrain.brain")

#: Failed attempts kept per conversation for the next planning.
CONTEXTUAL_PLAN_INFO_SIZE = 10


@dataclass
class BrainContext:
    """The input of one run: the user's message, where it belongs, what the plan may use.

    ``chain_info`` is what the plan's chains share beside their own arguments: only
    ``__chains_intermediate_results``, kept across the run's plans. What the
    planner and validator are told lives in :class:`~dcbrain.brain.planning.PlanningContext`,
    which chains never see.
    """

    current_input: TextMessage
    conversation_id: str
    run_id: str
    tools: list[Tool] = field(default_factory=list)
    recall: Recall | None = None
    conversation: list[TextMessage] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    chain_info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_question(
        cls, message: TextMessage, conversation_id: str, run_id: str, tools: list[Tool]
    ) -> BrainContext:
        """A context for ``message``; ``current_input`` is a copy the run may write into."""
        current_input = TextMessage(
            content=message.content,
            role=message.role,
            additional_kwargs=dict(message.additional_kwargs),
            created_at=message.created_at,
        )
        return cls(current_input, conversation_id, run_id, tools=tools)


@dataclass
class BrainIntermediateResult:
    """The state of a run between lifecycle callbacks.

    ``current_plan``/``current_result`` are the plan being worked on and its result;
    ``interpreter_err`` the recoverable error of its run (it triggers a replan without
    validation); ``intermediate_plans_and_results`` archives earlier attempts of this run.
    """

    context: BrainContext
    current_plan: str | None = None
    current_result: ConsoleResult | None = None
    interpreter_err: Exception | None = None
    final_result: Any = None
    direct_answer: bool = False
    suggestion: str | None = None
    suggestions: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    intermediate_plans_and_results: list[dict[str, Any]] = field(default_factory=list)
    last_result: Any = None
    last_error: str | None = None
    iterations: int = 0
    attempt_recorded: bool = False
    status: BrainStatus | None = None
    reason: BrainReason | None = None
    error: str | None = None
    validated_by: dict[str, Any] | None = None
    failed_plans: dict[str, int] = field(default_factory=dict)
    repeats: int = 0
    output: Any = None
    reply: TextMessage | None = None
    #: Whether the current plan ended with ``replan_with(value)``, and the plans that did
    #: (``plan``, ``value``, ``calls``: the names of the calls it made, ``iteration``).
    replanning: bool = False
    looked_up: list[dict[str, Any]] = field(default_factory=list)

    def start_attempt(self) -> None:
        """Archive the current plan and its result, if any, and clear them for the next."""
        if self.current_plan is not None or self.interpreter_err is not None:
            record = self.attempt_record()
            record["iteration"] = self.iterations
            self.intermediate_plans_and_results.append(record)
        self.current_plan = None
        self.current_result = None
        self.interpreter_err = None
        self.attempt_recorded = False
        self.replanning = False

    def answer_message(self, text: str) -> TextMessage:
        """``text`` as the assistant's message of this run, with how the run ended; it is
        kept as the run's ``reply``."""
        self.reply = TextMessage(
            content=text,
            role="assistant",
            additional_kwargs={"run_id": self.context.run_id, "status": self.status,
                               "reason": self.reason},
        )
        return self.reply

    def attempt_record(self) -> dict[str, Any]:
        """The current plan, its result and what went wrong, as the planner will see it."""
        result = None
        if self.current_result is not None:
            result = describe_value(self.current_result.value)
        return {
            "plan": self.current_plan or "",
            "result": result or "",
            "error": str(self.interpreter_err) if self.interpreter_err is not None else "",
            "suggestion": self.suggestion or "",
        }


class ContextualPlanInfo:
    """The last failed attempts of each conversation, shown to its next plannings.

    With a ``store`` the attempts live in its key/values (one key per conversation): read
    at every use and written on every change, so brains in other processes on the same
    store see them. A store that fails is logged and the attempts are kept in this
    process instead, so a run never fails over them.
    """

    def __init__(
        self, size: int = CONTEXTUAL_PLAN_INFO_SIZE, store: AttemptStore | None = None
    ) -> None:
        self.size = size
        self.store = store
        self._attempts: dict[str, deque[dict[str, Any]]] = {}

    def of(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversation's failed attempts, oldest first."""
        return list(self._current(conversation_id))

    def record(self, ir: BrainIntermediateResult) -> None:
        """Remember the current attempt of ``ir`` if it failed (once per attempt; a plan that
        ended with ``replan_with`` did not fail)."""
        if ir.attempt_recorded or ir.replanning \
                or (ir.current_plan is None and ir.interpreter_err is None):
            return
        ir.attempt_recorded = True
        conversation_id = ir.context.conversation_id
        attempts = self._current(conversation_id)
        attempts.append(ir.attempt_record())
        if self.store is not None:
            try:
                self.store.put_value(contextual_plan_info_key(conversation_id), list(attempts))
            except Exception:
                logger.warning("could not store the failed attempts of conversation %r",
                               conversation_id, exc_info=True)

    def clear(self, conversation_id: str) -> None:
        self._attempts.pop(conversation_id, None)
        if self.store is not None:
            try:
                self.store.delete_value(contextual_plan_info_key(conversation_id))
            except Exception:
                logger.warning("could not clear the failed attempts of conversation %r",
                               conversation_id, exc_info=True)

    def _current(self, conversation_id: str) -> deque[dict[str, Any]]:
        """The conversation's attempts, read from the store when there is one."""
        if self.store is not None:
            try:
                stored = self.store.get_value(contextual_plan_info_key(conversation_id), [])
            except Exception:
                logger.warning("could not read the failed attempts of conversation %r",
                               conversation_id, exc_info=True)
            else:
                self._attempts[conversation_id] = deque(_attempts(stored), maxlen=self.size)
        return self._attempts.setdefault(conversation_id, deque(maxlen=self.size))


def contextual_plan_info_key(conversation_id: str) -> str:
    """The store key of a conversation's failed attempts."""
    return f"dcbrain.contextual_plan_info:{conversation_id}"


def _attempts(stored: Any) -> list[dict[str, str]]:
    """Stored attempts in their known shape; anything else in the value is dropped."""
    if not isinstance(stored, list):
        return []
    fields = ("plan", "result", "error", "suggestion")
    return [{name: str(attempt.get(name, "")) for name in fields}
            for attempt in stored if isinstance(attempt, dict)]


class DeferredEvents:
    """A run's events as dicts, made on first read: most callers never read them.

    ``make`` turns the run's recorded events into dicts; it runs once (the run is over
    when this is built: its event log is sealed, so the dicts are the same whenever they
    are made)."""

    def __init__(self, make: Callable[[], list[dict[str, Any]]]) -> None:
        self._make: Callable[[], list[dict[str, Any]]] | None = make
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def resolve(self) -> list[dict[str, Any]]:
        with self._lock:
            if self._make is not None:
                self._events, self._make = self._make(), None
            return self._events


class _EventsField:
    """:attr:`BrainResult.events`: a list, or :class:`DeferredEvents` made a list when read."""

    _slot = "_events"

    def __get__(self, result: Any, owner: type | None = None) -> list[dict[str, Any]]:
        if result is None:
            raise AttributeError("events")
        value = result.__dict__[self._slot]
        if type(value) is DeferredEvents:
            value = value.resolve()
            result.__dict__[self._slot] = value
        return value  # type: ignore[no-any-return]

    def __set__(self, result: Any, value: list[dict[str, Any]] | DeferredEvents) -> None:
        result.__dict__[self._slot] = value


@dataclass
class BrainResult:
    """How a run ended and everything that happened on the way.

    ``status`` is ``succeeded``, ``failed`` or ``aborted``; ``reason`` says why
    (``validated``, ``direct_answer``, ``max_iterations``, ``max_tokens``, ``timeout``,
    ``aborted``, ``repeated_plan``, ``error``). A run asked not to wait for approvals
    returns ``waiting`` (reason ``approval``) with its ``pending_approvals``, to be
    decided and resumed by its ``run_id``. ``output`` is the answer as the caller's
    ``output_type`` (an instance of it; without one, the same value as ``final_result``;
    ``None`` unless the run succeeded). ``messages`` are the run's messages: the question
    and the answer the brain committed to the conversation (none for an aborted run).
    ``plans`` holds every tf_plan script in order,
    ``last_result`` the value of the last plan that ran, ``suggestions`` every validator
    suggestion, ``usage`` the tokens of every LLM call (chains inside plans included),
    ``events`` the whole event stream as dicts.
    """

    status: BrainStatus
    reason: BrainReason
    final_result: Any
    plans: list[str]
    last_result: Any
    suggestions: list[str]
    usage: Usage
    events: list[dict[str, Any]]  # read through _EventsField (set below the class)
    conversation_id: str
    run_id: str
    iterations: int = 0
    error: str | None = None
    last_error: str | None = None
    duration_s: float = 0.0
    validated_by: dict[str, Any] | None = None
    reused_calls: int = 0
    output: Any = None
    messages: list[TextMessage] = field(default_factory=list)
    #: The calls a ``waiting`` result waits for (decide them, then resume the run).
    pending_approvals: list[ApprovalRequest] = field(default_factory=list)

    @classmethod
    def from_intermediate(
        cls, ir: BrainIntermediateResult, usage: Usage, duration_s: float
    ) -> BrainResult:
        """The result of a finished run; a run that never reached a terminal state aborted."""
        status = ir.status or "aborted"
        return cls(
            status=status,
            reason=ir.reason or "error",
            final_result=ir.final_result if status == "succeeded" else None,
            plans=list(ir.plans),
            last_result=ir.last_result,
            suggestions=list(ir.suggestions),
            usage=usage,
            events=[],
            conversation_id=ir.context.conversation_id,
            run_id=ir.context.run_id,
            iterations=ir.iterations,
            error=ir.error,
            last_error=ir.last_error,
            duration_s=duration_s,
            output=ir.output if status == "succeeded" else None,
            messages=[ir.context.current_input, *([ir.reply] if ir.reply is not None else [])],
        )

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    @property
    def last_plan(self) -> str | None:
        return self.plans[-1] if self.plans else None

    def to_dict(self, *, include_events: bool = True) -> dict[str, Any]:
        """A JSON-able dict of the result (``include_events=False`` leaves the events out)."""
        record: dict[str, Any] = {
            "status": self.status,
            "reason": self.reason,
            "final_result": _jsonable(self.final_result),
            "plans": list(self.plans),
            "last_result": _jsonable(self.last_result),
            "suggestions": list(self.suggestions),
            "usage": self.usage.to_dict(),
            "conversation_id": self.conversation_id,
            "run_id": self.run_id,
            "iterations": self.iterations,
            "error": self.error,
            "last_error": self.last_error,
            "duration_s": self.duration_s,
            "reused_calls": self.reused_calls,
        }
        if self.validated_by is not None:  # nobody judged a direct answer
            record["validated_by"] = self.validated_by
        if self.pending_approvals:
            record["pending_approvals"] = [r.to_dict() for r in self.pending_approvals]
        if include_events:
            record["events"] = list(self.events)
        return record


#: Set after the dataclass is made: the field stays a required one without a default.
setattr(BrainResult, "events", _EventsField())  # noqa: B010


def describe_value(value: Any, limit: int = 4000) -> str:
    """A plan value as text for prompts: strings as they are, other data as JSON."""
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= limit else text[: limit - 12] + "…[truncated]"


def _jsonable(value: Any) -> Any:
    return plain(value)
