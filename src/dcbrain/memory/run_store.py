"""The ``RunStore`` interface: runs, their events and a small key/value table.

The server records every run and its event stream here, and a brain keeps its state
between processes here (the failed attempts of each conversation). Every method has an
``a``-prefixed async twin that runs the sync one in a worker thread.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from dcbrain.memory._closing import ClosableStore


@dataclass(frozen=True)
class StoredRun:
    """A run as a store keeps it: its status and a JSON-able ``data`` dict.

    The same row for every store (a :class:`RunStore`, the durable store). What durable
    execution keeps beside a run's record is read through the typed properties below,
    never as ``data`` keys; :class:`dcbrain.runs.RunRecord` is the typed view of the rest.
    """

    run_id: str
    conversation_id: str | None
    status: str
    data: dict[str, Any]
    created_at: float
    updated_at: float

    @property
    def executions(self) -> int:
        """How many executions a durable run has had (``0`` before its first)."""
        return int(self.data.get(EXECUTIONS) or 0)

    @property
    def workflow_id(self) -> str:
        """The durable workflow that executes the run (a continuation's own; by default
        the run's id)."""
        return str(self.data.get(WORKFLOW_ID) or self.run_id)

    @property
    def previous_workflow_id(self) -> str | None:
        """The workflow a continuation follows (its application version goes on)."""
        value = self.data.get(PREVIOUS_WORKFLOW_ID)
        return None if value is None else str(value)

    @property
    def executor_id(self) -> str | None:
        """The worker that executes or executed the run (the one whose outcome was
        recorded)."""
        value = self.data.get(EXECUTOR_ID)
        return None if value is None else str(value)


#: The keys of ``StoredRun.data`` durable execution writes (read through its properties).
EXECUTIONS = "executions"
WORKFLOW_ID = "workflow_id"
PREVIOUS_WORKFLOW_ID = "previous_workflow_id"
EXECUTOR_ID = "executor_id"

#: The name this row had; the typed run is :class:`dcbrain.runs.RunRecord`.
RunRecord = StoredRun


@dataclass(frozen=True)
class RunEventRecord:
    """One event of a run, in ``seq`` order."""

    run_id: str
    seq: int
    event: dict[str, Any]
    created_at: float


class RunStore(ClosableStore, ABC):
    """Runs, run events and key/values.

    Implementations must be safe to share between threads and brains of one process.
    """

    @abstractmethod
    def save_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        """Create or replace a run's status and data (its creation time is kept)."""

    @abstractmethod
    def get_run(self, run_id: str) -> StoredRun | None:
        """The run, or ``None`` when it was never saved."""

    @abstractmethod
    def append_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        """Store event ``seq`` of a run; a second event with the same ``seq`` is an error."""

    @abstractmethod
    def run_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        """The run's events with ``seq > after_seq``, in ``seq`` order."""

    @abstractmethod
    def list_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[StoredRun]:
        """Runs, newest first; only the conversation's when ``conversation_id`` is given."""

    @abstractmethod
    def page_runs(self, statuses: Collection[str] = (), conversation_id: str | None = None,
                  limit: int = 50, before: tuple[float, str] | None = None) -> list[StoredRun]:
        """Up to ``limit`` runs newest first by ``(created_at, run_id)``, only those strictly
        before ``before`` (such a pair), of one of ``statuses`` (any when empty) and of
        ``conversation_id`` when given."""

    @abstractmethod
    def finished_runs(self, statuses: Collection[str], ended_before: float,
                      limit: int) -> list[str]:
        """Ids of up to ``limit`` runs of one of ``statuses`` last changed before
        ``ended_before`` (a Unix time), oldest first."""

    @abstractmethod
    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Forget the runs and their events; returns how many runs there were."""

    @abstractmethod
    def put_value(self, key: str, value: Any) -> None:
        """Store a JSON-able value under ``key``, replacing any previous one."""

    @abstractmethod
    def get_value(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""

    @abstractmethod
    def delete_value(self, key: str) -> bool:
        """Remove ``key``; ``True`` when it existed."""

    # -- async twins -------------------------------------------------------------------

    async def asave_run(
        self, run_id: str, conversation_id: str | None, status: str, data: dict[str, Any]
    ) -> None:
        await asyncio.to_thread(self.save_run, run_id, conversation_id, status, data)

    async def aget_run(self, run_id: str) -> StoredRun | None:
        return await asyncio.to_thread(self.get_run, run_id)

    async def aappend_run_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        await asyncio.to_thread(self.append_run_event, run_id, seq, event)

    async def arun_events(self, run_id: str, after_seq: int = -1) -> list[RunEventRecord]:
        return await asyncio.to_thread(self.run_events, run_id, after_seq)

    async def alist_runs(
        self, conversation_id: str | None = None, limit: int | None = None
    ) -> list[StoredRun]:
        return await asyncio.to_thread(self.list_runs, conversation_id, limit)

    async def aput_value(self, key: str, value: Any) -> None:
        await asyncio.to_thread(self.put_value, key, value)

    async def aget_value(self, key: str, default: Any = None) -> Any:
        return await asyncio.to_thread(self.get_value, key, default)

    async def adelete_value(self, key: str) -> bool:
        return await asyncio.to_thread(self.delete_value, key)
