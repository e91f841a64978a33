"""The event vocabulary every layer emits: brain, plan-execute agent, interpreter calls.

An event is a plain record: a ``type`` from :class:`EventType`, a sequence number within
its run, a wall-clock timestamp and a JSON-able ``data`` dict. Subscribers receive
``Event`` objects; ``Event.to_dict()`` is what traces, servers and results store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    RUN_STARTED = "run_started"
    STATE_CHANGED = "state_changed"
    PLAN_CREATED = "plan_created"
    PLAN_REVISED = "plan_revised"
    PLAN_FINISHED = "plan_finished"
    CALL_STARTED = "call_started"
    CALL_FINISHED = "call_finished"
    STEP_STARTED = "step_started"
    STEP_FINISHED = "step_finished"
    VALIDATION = "validation"
    BUDGET = "budget"
    ERROR = "error"
    FINAL = "final"


@dataclass(frozen=True)
class Event:
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    ts: float = field(default_factory=time.time)
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"type": str(self.type), "seq": self.seq, "ts": self.ts}
        if self.run_id is not None:
            record["run_id"] = self.run_id
        record.update(self.data)
        return record


Subscriber = Callable[[Event], None]


class EventLog:
    """Collects the events of one run in order and fans them out to subscribers.

    A subscriber that raises is dropped from delivery of that event only; the run
    never fails because an observer did.
    """

    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, type: str, **data: Any) -> Event:
        event = Event(type=type, data=data, seq=len(self.events), run_id=self.run_id)
        self.events.append(event)
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                continue
        return event

    def as_dicts(self) -> list[dict[str, Any]]:
        return [event.to_dict() for event in self.events]
