"""The envelope of an event and the log a run emits its events through.

An :class:`Event` wraps one payload (an :class:`EventData`; the payload classes are in
:mod:`dcbrain.events`) with its sequence number within the run, a wall-clock timestamp
and the run id; an :class:`EventLog` numbers a run's events and fans them out to its
subscribers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from dcbrain.values.jsonsafe import plain

logger = logging.getLogger("dcbrain.events")


class EventData(BaseModel):
    """The payload of one event; ``type`` is its type on the wire."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The payload's fields as JSON values; fields left at ``None`` are left out."""
        data: dict[str, Any] = plain(self.model_dump(mode="json", exclude_none=True))
        return data


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

    Thread-safe. An event is numbered and kept under the log's lock; subscribers are
    called outside it, in ``seq`` order, by whichever emitting thread finds nobody
    delivering (the others only queue their event). A subscriber that raises is skipped
    for that event only; the run never fails because an observer did. A brain's run
    delivers its events itself, off its threads (see
    :class:`~dcbrain.brain.trace.RunRecorder`). Once :meth:`seal` is called (the run's
    final event went out) later events are dropped, so nothing follows ``final``.
    """

    def __init__(self, run_id: str | None = None, first_seq: int = 0) -> None:
        self.run_id = run_id
        self.first_seq = first_seq  # a resumed run's log goes on after the earlier ones
        self.events: list[Event] = []
        self.sealed = False
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()
        self._undelivered: deque[Event] = deque()
        self._delivering = False

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
            if not self._subscribers:
                return event
            self._undelivered.append(event)
            if self._delivering:
                return event  # the thread delivering takes it, in order
            self._delivering = True
        self._deliver()
        return event

    def _deliver(self) -> None:
        while True:
            with self._lock:
                if not self._undelivered:
                    self._delivering = False
                    return
                event = self._undelivered.popleft()
                subscribers = list(self._subscribers)
            for subscriber in subscribers:
                try:
                    subscriber(event)
                except Exception:  # an observer's bug must not end the run
                    logger.warning("an event subscriber failed on %s event %d of run %s",
                                   event.type, event.seq, self.run_id, exc_info=True)

    def seal(self) -> None:
        with self._lock:
            self.sealed = True

    def as_dicts(self) -> list[dict[str, Any]]:
        with self._lock:
            return [event.to_dict() for event in self.events]
