"""How long finished runs are kept: pruning them, by hand or on a schedule.

A run is pruned once it has ended (a terminal status) and has not changed for the kept
time: its record, its events and its journal go, and with durable runs its DBOS workflow
rows. A queued, running or waiting run is never pruned, however old. Conversations (the
messages in memory) are not runs and are kept.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import Final, Protocol

from dcbrain.runs.status import TERMINAL_STATUSES

logger = logging.getLogger("dcbrain.runs")

#: Runs deleted per transaction (each batch is a few statements).
PRUNE_BATCH: Final = 500
DEFAULT_CHECK_EVERY_S: Final = 3600.0

_DURATION: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([dhms])\s*")
_UNIT_S: Final = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m`` or ``45s``; ``ValueError`` naming the problem."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration: write a number and a unit, "
                         "d (days), h (hours), m (minutes) or s (seconds), e.g. 30d")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"{text!r}: the duration must be more than zero")
    return seconds


class PrunableStore(Protocol):
    """What pruning needs of a store (every run store and durable store has it)."""

    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]: ...

    def delete_runs(self, run_ids: Sequence[str]) -> int: ...


def prune_runs(store: PrunableStore, older_than_s: float, *,
               forget_workflows: Callable[[Sequence[str]], Sequence[str]] | None = None,
               now: float | None = None) -> int:
    """Delete the runs that ended more than ``older_than_s`` ago; returns how many.

    ``forget_workflows`` deletes the durable layer's rows of the given runs first and
    returns the ids it is done with (a workflow still finishing is kept, and its run
    with it, until a later prune).
    """
    if older_than_s <= 0:
        raise ValueError("older_than_s must be more than zero")
    ended_before = (time.time() if now is None else now) - older_than_s
    statuses = sorted(TERMINAL_STATUSES)
    pruned = 0
    kept: set[str] = set()  # ended, but their workflows are still finishing
    while True:  # each turn deletes runs or keeps more: it ends
        found = store.finished_runs(statuses, ended_before, PRUNE_BATCH + len(kept))
        batch = [run_id for run_id in found if run_id not in kept]
        if not batch:
            return pruned
        if forget_workflows is not None:
            done = set(forget_workflows(batch))
            kept.update(run_id for run_id in batch if run_id not in done)
            batch = [run_id for run_id in batch if run_id in done]
        pruned += store.delete_runs(batch)


class RetentionSchedule:
    """Prunes runs older than ``keep_s`` now and then every ``every_s``, in a thread.

    ``prune`` is given ``keep_s`` and returns how many runs it deleted; a failure is
    logged and tried again at the next turn.
    """

    def __init__(self, prune: Callable[[float], int], keep_s: float,
                 every_s: float = DEFAULT_CHECK_EVERY_S) -> None:
        if keep_s <= 0 or every_s <= 0:
            raise ValueError("keep_s and every_s must be more than zero")
        self.prune = prune
        self.keep_s = keep_s
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dcbrain-retention",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                pruned = self.prune(self.keep_s)
                if pruned:
                    logger.info("retention: pruned %d run(s) that ended more than %.0f s ago",
                                pruned, self.keep_s)
            except Exception:
                logger.exception("retention: pruning runs failed; trying again in %.0f s",
                                 self.every_s)
            self._stop.wait(self.every_s)
