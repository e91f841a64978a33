"""The event vocabulary every layer emits: brain, plan-execute agent, plan calls, LLM calls.

Each kind of event is a class below (a pydantic model with the fields of that kind; a
type several producers emit has a class per producer, with what that producer always
sends required); :class:`Event` is the envelope a run delivers: the payload, its
sequence number within the run, a wall-clock timestamp and the run id.
``Event.to_dict()`` is what traces, servers and results store: the envelope's fields and
the payload's, all JSON values (numbers stay numbers); :func:`parse_event` reads it back.
A value too large for an event is replaced by
``{"truncated": true, "size": <characters of its JSON text>, "preview": "<its start>"}``
(see :func:`clip`). ``docs/events.md`` lists every event with its fields.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Literal, Self, Union

from pydantic import Field, TypeAdapter, ValidationError

from dcbrain.events.envelope import Event as Event
from dcbrain.events.envelope import EventData as EventData
from dcbrain.events.envelope import EventLog as EventLog
from dcbrain.events.envelope import Subscriber as Subscriber
from dcbrain.events.plan_diff import DiffItem as DiffItem
from dcbrain.events.plan_diff import PlanDiffData as PlanDiffData
from dcbrain.events.plan_diff import RevisedItem as RevisedItem
from dcbrain.events.values import ARGUMENT_CLIP as ARGUMENT_CLIP
from dcbrain.events.values import ARGUMENTS_CLIP as ARGUMENTS_CLIP
from dcbrain.events.values import DEFAULT_CLIP as DEFAULT_CLIP
from dcbrain.events.values import OMITTED_KEY as OMITTED_KEY
from dcbrain.events.values import clip as clip
from dcbrain.events.values import clip_arguments as clip_arguments
from dcbrain.events.values import to_json_value as to_json_value


class EventType(StrEnum):
    RUN_STARTED = "run_started"
    RUN_RESUMED = "run_resumed"
    STATE_CHANGED = "state_changed"
    PLAN_DELTA = "plan_delta"
    PLAN_CREATED = "plan_created"
    PLAN_REVISED = "plan_revised"
    PLAN_FINISHED = "plan_finished"
    CALL_STARTED = "call_started"
    CALL_FINISHED = "call_finished"
    CALL_ABANDONED = "call_abandoned"
    CALL_RETRY = "call_retry"
    CHAIN_DELTA = "chain_delta"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    POLICY_DENIED = "policy_denied"
    STEP_STARTED = "step_started"
    STEP_FINISHED = "step_finished"
    VALIDATION = "validation"
    BUDGET = "budget"
    ERROR = "error"
    FINAL = "final"


# -- runs ------------------------------------------------------------------------------


class BrainRunStarted(EventData):
    """A brain run began: the question, what the plans may call and the budgets."""

    type: ClassVar[str] = EventType.RUN_STARTED
    question: str
    conversation_id: str
    chains: list[str]
    tools: list[str]
    max_iterations: int
    max_tokens: int
    timeout: float


class AgentRunStarted(EventData):
    """A plan-execute agent run began: the goal, the tools and the budgets."""

    type: ClassVar[str] = EventType.RUN_STARTED
    goal: str
    tools: list[str]
    max_steps: int
    max_replans: int


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


class PlanDelta(EventData):
    """Text the planner has just written, while it writes (its LLM streams): ``text``
    follows the first ``offset`` characters of the reply. ``offset`` 0 starts a new
    reply (a planner that asks again starts over). Sent at most about 20 times a second;
    ``plan_created``/``plan_revised`` carry the whole plan once it is written."""

    type: ClassVar[str] = EventType.PLAN_DELTA
    iteration: int
    offset: int
    text: str


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
#: The kinds of call a tf_plan makes.
PlanCallKind = Literal["chain", "tool", "construct_chain"]
#: Which part of a brain run an LLM call belongs to.
LLMPhase = Literal["plan", "validate", "run"]
CallStatus = Literal["ok", "error", "aborted", "interrupted"]


class CallStarted(EventData):
    """A call began: what every ``call_started`` carries. A run emits one of its
    subclasses: :class:`PlanCallStarted`, :class:`LLMCallStarted`, :class:`StepCallStarted`."""

    type: ClassVar[str] = EventType.CALL_STARTED
    call_id: str
    kind: CallKind
    name: str

    @abstractmethod
    def closed(self, status: CallStatus, error: str | None, duration_s: float) -> CallFinished:
        """The ``call_finished`` that ends this call when it never reported its end."""


class PlanCallStarted(CallStarted):
    """A tf_plan's chain, tool or ``__construct_chain`` call began.

    ``reused`` calls return the result recorded for the same call earlier in the run
    (the call journal) and run nothing. ``line``/``col`` is the call in the plan;
    ``branch`` its ``parallel`` branch (none outside one), ``path`` the branch path
    (``""`` at the top level).
    """

    kind: PlanCallKind
    args: dict[str, Any]
    reused: bool
    line: int
    col: int
    path: str
    branch: int | None = None

    def closed(self, status: CallStatus, error: str | None, duration_s: float) -> PlanCallFinished:
        return PlanCallFinished(
            call_id=self.call_id, kind=self.kind, name=self.name, status=status,
            error=error, duration_s=duration_s, reused=self.reused, line=self.line,
            col=self.col, path=self.path, branch=self.branch,
        )


class LLMCallStarted(CallStarted):
    """An LLM call of a brain run began: its model, phase and projected size."""

    kind: Literal["llm"] = "llm"
    model: str
    phase: LLMPhase
    prompt_tokens: int
    max_output_tokens: int

    def closed(self, status: CallStatus, error: str | None, duration_s: float) -> LLMCallFinished:
        return LLMCallFinished(
            call_id=self.call_id, name=self.name, status=status, error=error,
            duration_s=duration_s, model=self.model, phase=self.phase,
            prompt_tokens=self.prompt_tokens, completion_tokens=0, total_tokens=0,
        )


class StepCallStarted(CallStarted):
    """One tool call of an agent's ``gather`` step began (``index``: its place in the step)."""

    kind: Literal["tool"] = "tool"
    args: dict[str, Any]
    step_id: int
    revision: int
    index: int

    def closed(self, status: CallStatus, error: str | None, duration_s: float) -> StepCallFinished:
        return StepCallFinished(
            call_id=self.call_id, name=self.name, status=status, error=error,
            duration_s=duration_s, step_id=self.step_id, revision=self.revision,
            index=self.index,
        )


class CallFinished(EventData):
    """A call ended: what every ``call_finished`` carries. ``status`` is ``ok``,
    ``error``, ``aborted`` (the run stopped first) or ``interrupted`` (the process
    executing it stopped; a resumed run runs it again); ``error`` says why it failed.
    A run emits one of its subclasses: :class:`PlanCallFinished`,
    :class:`LLMCallFinished`, :class:`StepCallFinished`."""

    type: ClassVar[str] = EventType.CALL_FINISHED
    call_id: str
    kind: CallKind
    name: str
    status: CallStatus
    duration_s: float
    error: str | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if cls is CallFinished:  # as CallStarted, which its abstract ``closed`` guards
            raise TypeError("CallFinished is the base of PlanCallFinished, LLMCallFinished "
                            "and StepCallFinished: construct one of those")
        return super().__new__(cls)


class PlanCallFinished(CallFinished):
    """A tf_plan's call ended: its ``result`` (clipped) or its error."""

    kind: PlanCallKind
    reused: bool
    line: int
    col: int
    path: str
    branch: int | None = None
    result: Any = None


class LLMCallFinished(CallFinished):
    """An LLM call ended: the tokens it used (a failed call spent none of its own)."""

    kind: Literal["llm"] = "llm"
    model: str
    phase: LLMPhase
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    finish_reason: str | None = None


class StepCallFinished(CallFinished):
    """One tool call of an agent's ``gather`` step ended: its result or its error."""

    kind: Literal["tool"] = "tool"
    step_id: int
    revision: int
    index: int
    result: Any = None


class CallAbandoned(EventData):
    """The run stopped waiting for a sync chain or tool call that had not returned: at its
    plan's time limit (its ``call_finished`` follows, status ``error``) or when the run was
    aborted. The call's thread runs on until the callable returns; whatever it does until
    then still happens, and its return is ignored (never recorded as finished).
    ``running_s`` is how long it had run."""

    type: ClassVar[str] = EventType.CALL_ABANDONED
    call_id: str
    kind: PlanCallKind
    name: str
    line: int
    col: int
    path: str
    branch: int | None = None
    running_s: float


class CallRetry(EventData):
    """A try of a chain or tool call failed with an error worth another (its
    ``retry_on``): try ``attempt`` of ``attempts`` failed with ``error``, and the next
    starts after ``delay_s`` seconds. The call's ``call_finished`` follows its last try."""

    type: ClassVar[str] = EventType.CALL_RETRY
    call_id: str
    kind: PlanCallKind
    name: str
    attempt: int
    attempts: int
    error: str
    delay_s: float
    line: int | None = None
    branch: int | None = None
    path: str | None = None


class ChainDelta(EventData):
    """Text a plan's chain call has just had its LLM write, while it writes (the chain's
    LLM streams): ``text`` follows the first ``offset`` characters of the reply; ``offset``
    0 starts a new reply (another try, another LLM call of the chain). Between the call's
    ``call_started`` and ``call_finished``, at most about 20 a second; the call's
    ``result`` is still its whole output."""

    type: ClassVar[str] = EventType.CHAIN_DELTA
    call_id: str
    name: str
    offset: int
    text: str


class ApprovalRequested(EventData):
    """A plan reached a call that needs a person's approval: the run waits (status
    ``waiting``) until it is decided, or is denied at ``expires_at`` (epoch seconds).
    ``args_hash`` binds a decision to exactly these ``arguments``; ``why`` says why the
    call needs approval; ``plan`` is the plan that wants to make it."""

    type: ClassVar[str] = EventType.APPROVAL_REQUESTED
    call_id: str
    kind: PlanCallKind
    tool: str
    arguments: dict[str, Any]
    args_hash: str
    line: int
    col: int
    why: str
    plan: str
    expires_at: float


class ApprovalDecided(EventData):
    """A request was decided: ``approved`` or not, by whom (``decided_by``; ``timeout``
    when nobody decided in time), when (``decided_at``, epoch seconds) and why."""

    type: ClassVar[str] = EventType.APPROVAL_DECIDED
    call_id: str
    tool: str
    approved: bool
    reason: str
    decided_by: str
    decided_at: float


class PolicyDenied(EventData):
    """A policy refused a plan's call before it ran: ``name`` of kind ``kind`` at plan
    ``line``, refused by ``policy`` because ``reason``; ``argument`` and its untrusted
    ``sources`` when the refusal is about one (never the argument's value)."""

    type: ClassVar[str] = EventType.POLICY_DENIED
    kind: PlanCallKind
    name: str
    policy: str
    reason: str
    argument: str | None = None
    sources: list[str] = Field(default_factory=list)
    line: int | None = None


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


#: Every event class a run emits, in the order ``docs/events.md`` lists them. A type
#: that several producers emit has a class for each, told apart by their fields.
EVENT_CLASSES: tuple[type[EventData], ...] = (
    BrainRunStarted, AgentRunStarted, RunResumed, StateChanged, PlanDelta, PlanCreated,
    PlanRevised,
    PlanFinished, PlanCallStarted, LLMCallStarted, StepCallStarted, PlanCallFinished,
    LLMCallFinished, StepCallFinished, CallAbandoned, CallRetry, ChainDelta, ApprovalRequested,
    ApprovalDecided, PolicyDenied, StepStarted, StepFinished,
    Validation, Budget, ErrorEvent, Final,
)


def event_classes(event_type: str) -> tuple[type[EventData], ...]:
    """The classes of events of type ``event_type`` (none for an unknown type)."""
    return tuple(cls for cls in EVENT_CLASSES if cls.type == event_type)


#: The envelope's keys in an event's JSON form (``Event.to_dict()``).
ENVELOPE_KEYS = frozenset({"type", "seq", "ts", "run_id"})


def parse_payload(data: Mapping[str, Any]) -> EventData:
    """The typed payload of an event's JSON form (``Event.to_dict()``, a stored event).

    Raises ``ValueError`` naming the type when no event class takes ``data``.
    """
    event_type = str(data.get("type", ""))
    classes = event_classes(event_type)
    if not classes:
        raise ValueError(f"unknown event type {event_type!r}")
    problems: list[str] = []
    for cls in classes:
        # ``final`` repeats the run id in its own fields
        fields = {key: value for key, value in data.items()
                  if key not in ENVELOPE_KEYS or key in cls.model_fields}
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            problems.append(f"not a {cls.__name__}: {exc.errors()[0]['msg']} "
                            f"({'.'.join(map(str, exc.errors()[0]['loc']))})")
    raise ValueError(f"event of type {event_type!r} fits no event class: " + "; ".join(problems))


def parse_event(data: Mapping[str, Any]) -> Event:
    """The :class:`Event` of an event's JSON form: ``parse_event(e.to_dict()) == e``."""
    return Event(payload=parse_payload(data), seq=int(data.get("seq", 0)),
                 ts=float(data.get("ts", 0.0)), run_id=data.get("run_id"))


def event_json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON schema of each event type's payload, by type (``anyOf`` its classes when
    several producers emit it)."""
    schemas: dict[str, dict[str, Any]] = {}
    for event_type in dict.fromkeys(cls.type for cls in EVENT_CLASSES):
        classes = event_classes(event_type)
        if len(classes) == 1:
            schemas[event_type] = classes[0].model_json_schema()
        else:
            schemas[event_type] = TypeAdapter(Union[classes]).json_schema()  # noqa: UP007
    return schemas
