"""The event vocabulary every layer emits: brain, plan-execute agent, plan calls, LLM calls.

Each kind of event is one class below (a pydantic model with the fields of that kind);
:class:`Event` is the envelope a run delivers: the payload, its sequence number within
the run, a wall-clock timestamp and the run id. ``Event.to_dict()`` is what traces,
servers and results store: the envelope's fields and the payload's, all JSON values
(numbers stay numbers). A value too large for an event is replaced by
``{"truncated": true, "size": <characters of its JSON text>, "preview": "<its start>"}``
(see :func:`clip`). ``docs/events.md`` lists every event with its fields.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from dcbrain._jsonsafe import plain

logger = logging.getLogger("dcbrain.events")


class EventType(StrEnum):
    RUN_STARTED = "run_started"
    RUN_RESUMED = "run_resumed"
    STATE_CHANGED = "state_changed"
    PLAN_CREATED = "plan_created"
    PLAN_REVISED = "plan_revised"
    PLAN_FINISHED = "plan_finished"
    CALL_STARTED = "call_started"
    CALL_FINISHED = "call_finished"
    CALL_RETRY = "call_retry"
    STEP_STARTED = "step_started"
    STEP_FINISHED = "step_finished"
    VALIDATION = "validation"
    BUDGET = "budget"
    ERROR = "error"
    FINAL = "final"


#: Characters of JSON text a value may take in an event before it is clipped.
DEFAULT_CLIP = 2000


def clip(value: Any, limit: int = DEFAULT_CLIP) -> Any:
    """``value`` as a JSON value for an event, or a truncation marker when it is too large.

    Tuples become lists, sets sorted lists, non-finite floats their ``repr``, ints too
    long for decimal their hex string, other objects their ``str()`` (see
    :mod:`dcbrain._jsonsafe`);
    a value whose JSON text is longer than ``limit`` characters becomes
    ``{"truncated": True, "size": len(text), "preview": text[:limit]}`` (for a string,
    ``text`` is the string itself).
    """
    data = plain(value)
    if isinstance(data, bool | int | float) or data is None:
        return data
    if isinstance(data, str):
        if len(data) <= limit:
            return data
        return {"truncated": True, "size": len(data), "preview": data[:limit]}
    text = json.dumps(data, ensure_ascii=False)
    if len(text) <= limit:
        return data
    return {"truncated": True, "size": len(text), "preview": text[:limit]}


#: ``value`` as plain JSON data, never raising (see :mod:`dcbrain._jsonsafe`).
to_json_value = plain


#: Characters of JSON text one argument of a call may take in an event.
ARGUMENT_CLIP = 500
#: Characters of JSON text all the arguments of a call may take in an event.
ARGUMENTS_CLIP = 4 * DEFAULT_CLIP
#: The key under which an event says how many arguments it left out.
OMITTED_KEY = "..."


def clip_arguments(
    arguments: Mapping[str, Any], limit: int = ARGUMENT_CLIP, total: int = ARGUMENTS_CLIP
) -> dict[str, Any]:
    """A call's keyword ``arguments`` for an event: each one clipped to ``limit``
    characters, and the ones past ``total`` characters in all left out, counted under
    :data:`OMITTED_KEY` as ``{"truncated": True, "omitted": <count>}``."""
    shown: dict[str, Any] = {}
    used = 0
    for index, (key, value) in enumerate(arguments.items()):
        clipped = clip(value, limit)
        used += len(str(key)) + _json_length(clipped)
        if used > total:
            shown[OMITTED_KEY] = {"truncated": True, "omitted": len(arguments) - index}
            break
        shown[plain(str(key))] = clipped
    return shown


def _json_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


class EventData(BaseModel):
    """The payload of one event; each subclass is one event type (``type``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The payload's fields as JSON values; fields left at ``None`` are left out."""
        data: dict[str, Any] = plain(self.model_dump(mode="json", exclude_none=True))
        return data


# -- runs ------------------------------------------------------------------------------


class RunStarted(EventData):
    """A run began: a brain's question or an agent's goal, and the budgets it runs under."""

    type: ClassVar[str] = EventType.RUN_STARTED
    question: str | None = None
    goal: str | None = None
    conversation_id: str | None = None
    chains: list[str] | None = None
    tools: list[str] | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    max_steps: int | None = None
    max_replans: int | None = None


class RunResumed(EventData):
    """A durable run executes again after the process running it stopped: ``execution``
    counts from 1 (the first resume is execution 2); the events before this one are the
    earlier executions'. Calls they left open were closed ``interrupted`` just before."""

    type: ClassVar[str] = EventType.RUN_RESUMED
    execution: int
    reason: str
    earlier_duration_s: float = 0.0


class StateChanged(EventData):
    """The run's state machine moved from ``source`` to ``dest`` (by ``trigger``)."""

    type: ClassVar[str] = EventType.STATE_CHANGED
    source: str
    dest: str | None
    trigger: str | None = None


class Final(EventData):
    """The run ended: always the last event of a run."""

    type: ClassVar[str] = EventType.FINAL
    status: str
    reason: str | None = None
    final_result: Any = None
    error: str | None = None
    last_error: str | None = None
    plans: list[str] | None = None
    last_result: Any = None
    suggestions: list[str] | None = None
    usage: dict[str, Any] | None = None
    conversation_id: str | None = None
    run_id: str | None = None
    iterations: int | None = None
    duration_s: float | None = None
    validated_by: dict[str, Any] | None = None
    reused_calls: int | None = None
    steps_executed: int | None = None
    replans: int | None = None
    superseded_by: str | None = None


class ErrorEvent(EventData):
    """Something failed that the run reports but may survive (``source`` says where)."""

    type: ClassVar[str] = EventType.ERROR
    source: str
    error: str


class Budget(EventData):
    """Budget use after an LLM call, or a budget that ran out (``exhausted``)."""

    type: ClassVar[str] = EventType.BUDGET
    exhausted: bool
    budget: str | None = None
    used: float | None = None
    limit: float | None = None
    requested: int | None = None
    phase: str | None = None
    tokens_used: int | None = None
    tokens_left: int | None = None
    max_tokens: int | None = None
    iterations_used: int | None = None
    iterations_left: int | None = None
    max_iterations: int | None = None


# -- plans -----------------------------------------------------------------------------


class DiffItem(BaseModel):
    """One call of a plan in a diff: a brain plan's call or an agent's step."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    name: str
    args: dict[str, Any] = {}
    line: int | None = None


class RevisedItem(BaseModel):
    """A call present in both plans whose arguments changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    old: DiffItem
    new: DiffItem


class PlanDiffData(BaseModel):
    """The one diff shape of brain and agent revisions (seed 003's names).

    ``removed``: calls of the old plan gone from the new one; ``added``: new calls;
    ``revised``: same call site, other arguments; ``unchanged``: in both;
    ``done``: already executed calls the new plan does not repeat (agent);
    ``unified``: the unified text diff of two tf_plan scripts (brain).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    revision: int
    removed: list[DiffItem] = []
    added: list[DiffItem] = []
    revised: list[RevisedItem] = []
    unchanged: list[DiffItem] = []
    done: list[DiffItem] = []
    unified: str | None = None
    reason: str | None = None


class PlanCreated(EventData):
    """The run's first plan: a tf_plan script (brain) or a list of steps (agent)."""

    type: ClassVar[str] = EventType.PLAN_CREATED
    revision: int
    iteration: int | None = None
    plan: str | None = None
    calls: list[DiffItem] | None = None
    steps: list[dict[str, Any]] | None = None


class PlanRevised(EventData):
    """A later plan, with what changed against the previous one."""

    type: ClassVar[str] = EventType.PLAN_REVISED
    revision: int
    diff: PlanDiffData
    iteration: int | None = None
    plan: str | None = None
    previous_plan: str | None = None
    reason: str | None = None
    summary: str | None = None
    steps: list[dict[str, Any]] | None = None


class PlanFinished(EventData):
    """A plan ran (or was refused): its value or its error."""

    type: ClassVar[str] = EventType.PLAN_FINISHED
    ok: bool
    iteration: int | None = None
    result: Any = None
    error: str | None = None
    error_kind: str | None = None
    problems: list[str] | None = None
    stdout: str | None = None
    calls: int | None = None
    reused_calls: int | None = None
    duration_s: float | None = None
    skipped: bool | None = None


class Validation(EventData):
    """The validator's verdict on a plan's result."""

    type: ClassVar[str] = EventType.VALIDATION
    is_solved: bool
    suggestion: str
    iteration: int | None = None
    parse_error: str | None = None
    validated_by: dict[str, Any] | None = None


# -- calls and steps -------------------------------------------------------------------

CallKind = Literal["chain", "tool", "construct_chain", "llm"]
CallStatus = Literal["ok", "error", "aborted", "interrupted"]


class CallStarted(EventData):
    """A chain, tool, chain construction or LLM call began.

    ``reused`` calls return the result recorded for the same call earlier in the run
    (the call journal) and run nothing. ``path`` is the call's ``parallel`` branch path
    (``""`` at the top level). LLM calls carry ``model``, ``phase`` and token figures;
    an agent's gather calls carry ``step_id``, ``revision`` and ``index``.
    """

    type: ClassVar[str] = EventType.CALL_STARTED
    call_id: str
    kind: str
    name: str
    args: dict[str, Any] | None = None
    reused: bool = False
    line: int | None = None
    col: int | None = None
    branch: int | None = None
    path: str | None = None
    model: str | None = None
    phase: str | None = None
    prompt_tokens: int | None = None
    max_output_tokens: int | None = None
    step_id: int | None = None
    revision: int | None = None
    index: int | None = None


class CallFinished(EventData):
    """A call ended: ``status`` ``ok``, ``error`` or ``aborted`` (the run stopped first), or
    ``interrupted`` (the process executing it stopped; a resumed run runs it again)."""

    type: ClassVar[str] = EventType.CALL_FINISHED
    call_id: str
    kind: str
    name: str
    status: CallStatus
    reused: bool = False
    result: Any = None
    error: str | None = None
    duration_s: float | None = None
    line: int | None = None
    branch: int | None = None
    path: str | None = None
    model: str | None = None
    phase: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    finish_reason: str | None = None
    step_id: int | None = None
    revision: int | None = None
    index: int | None = None


class CallRetry(EventData):
    """A try of a chain or tool call failed with an error worth another (its
    ``retry_on``): try ``attempt`` of ``attempts`` failed with ``error``, and the next
    starts after ``delay_s`` seconds. The call's ``call_finished`` follows its last try."""

    type: ClassVar[str] = EventType.CALL_RETRY
    call_id: str
    kind: str
    name: str
    attempt: int
    attempts: int
    error: str
    delay_s: float
    line: int | None = None
    branch: int | None = None
    path: str | None = None


class StepStarted(EventData):
    """An agent step began executing."""

    type: ClassVar[str] = EventType.STEP_STARTED
    revision: int
    step_id: int
    tool_name: str
    args: dict[str, Any]
    expected_outcome: str | None = None
    execution: int | None = None


class StepFinished(EventData):
    """An agent step ended; ``cached`` steps were served by the partial-plan cache."""

    type: ClassVar[str] = EventType.STEP_FINISHED
    revision: int
    step_id: int
    tool_name: str
    status: str
    outcome: str
    cached: bool = False
    policy: str | None = None
    result: Any = None
    error: str | None = None
    expected_outcome: str | None = None
    execution: int | None = None


#: Every event class, by its ``type``.
EVENT_CLASSES: dict[str, type[EventData]] = {
    cls.type: cls
    for cls in (
        RunStarted, RunResumed, StateChanged, PlanCreated, PlanRevised, PlanFinished,
        CallStarted, CallFinished, CallRetry, StepStarted, StepFinished, Validation, Budget,
        ErrorEvent, Final,
    )
}


@dataclass(frozen=True)
class Event:
    """One event of a run: its typed ``payload``, position ``seq``, time ``ts``, ``run_id``."""

    payload: EventData
    seq: int = 0
    ts: float = field(default_factory=time.time)
    run_id: str | None = None

    @property
    def type(self) -> str:
        return self.payload.type

    @property
    def data(self) -> dict[str, Any]:
        """The payload's fields as JSON values (computed once).

        Not a ``functools.cached_property``: before Python 3.12 that one holds a lock shared
        by every instance, and events of many runs are read from many threads at once.
        """
        cached: dict[str, Any] | None = self.__dict__.get("_data")
        if cached is None:
            cached = self.payload.to_dict()
            object.__setattr__(self, "_data", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": str(self.type), "seq": self.seq, "ts": self.ts}
        if self.run_id is not None:
            record["run_id"] = self.run_id
        record.update(self.data)
        return record


Subscriber = Callable[[Event], None]


class EventLog:
    """Numbers the events of one run in order and fans them out to subscribers.

    Thread-safe. A subscriber that raises is skipped for that event only; the run never
    fails because an observer did. Once :meth:`seal` is called (the run's final event
    went out) later events are dropped, so nothing follows ``final``.
    """

    def __init__(self, run_id: str | None = None, first_seq: int = 0) -> None:
        self.run_id = run_id
        self.first_seq = first_seq  # a resumed run's log goes on after the earlier ones
        self.events: list[Event] = []
        self.sealed = False
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, payload: EventData) -> Event | None:
        """Append ``payload`` as the next event and deliver it; ``None`` once sealed."""
        with self._lock:
            if self.sealed:
                return None
            event = Event(payload=payload, seq=self.first_seq + len(self.events),
                          run_id=self.run_id)
            self.events.append(event)
            for subscriber in list(self._subscribers):
                try:
                    subscriber(event)
                except Exception:  # an observer's bug must not end the run
                    logger.warning("an event subscriber failed on %s event %d of run %s",
                                   event.type, event.seq, self.run_id, exc_info=True)
        return event

    def seal(self) -> None:
        with self._lock:
            self.sealed = True

    def as_dicts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [event.to_dict() for event in self.events]


def event_json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON schema of each event type's payload, by type."""
    return {name: cls.model_json_schema() for name, cls in EVENT_CLASSES.items()}
