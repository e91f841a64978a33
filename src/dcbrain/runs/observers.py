"""Who else hears every run's events in this process: metrics, for one.

A surface's sink gets a run's events for its clients; an observer added here gets the
events of every run of the process, after the sink, from whichever thread they happen
on. With none added, a run pays one empty-tuple check per event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from dcbrain.events import Event

logger = logging.getLogger("dcbrain.runs")

RunObserver = Callable[[Event], None]
"""Hears one event of a run (it must be quick and must not raise)."""


class RunObservers:
    """The observers of this process's runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._observers: tuple[RunObserver, ...] = ()

    def add(self, observer: RunObserver) -> Callable[[], None]:
        """Add ``observer``; returns what removes it again."""
        with self._lock:
            self._observers = (*self._observers, observer)

        def remove() -> None:
            with self._lock:
                self._observers = tuple(o for o in self._observers if o is not observer)

        return remove

    def notify(self, event: Event) -> None:
        for observer in self._observers:
            try:
                observer(event)
            except Exception:  # an observer's slip never costs a run its events
                logger.exception("a run observer failed on a %s event", event.type)


#: The observers of this process's runs.
run_observers = RunObservers()
