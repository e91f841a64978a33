"""What the HTTP layer needs of whatever runs the brains: the seam between app and runs.

:class:`~dcbrain.server.runs.RunManager` runs brains in the server's own process;
:class:`~dcbrain.server.durable_runs.DurableRuns` hands them to durable workers
(``dcbrain[durable]``). The app and the event stream only use this interface, in three
roles: :class:`RunsRole` (what a conversation's client does: submit, abort, read events),
:class:`RunAdmin` (what an operator does: page, prune, resume; the node's lifecycle) and
:class:`ApprovalsRole` (decide a call a run waits on). :class:`RunService` is all three.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from dcbrain.memory import StoredRun
from dcbrain.runs.listing import RunPage, RunQuery


class SubmittedRun(Protocol):
    """A run just accepted for a message."""

    @property
    def run_id(self) -> str: ...

    @property
    def supersedes(self) -> str | None: ...


class RunsRole(Protocol):
    """What a conversation's client does with runs: submit, abort, describe, stream."""

    async def submit(self, conversation_id: str, content: str) -> SubmittedRun:
        """Start a run for a new message (superseding the conversation's active run).

        Raises :class:`~dcbrain.server.runs.TooManyRuns` when every slot is taken.
        """
        ...

    async def abort_run(self, run_id: str) -> bool:
        """Ask a live run to stop; ``False`` when it is not live (unknown or ended)."""
        ...

    async def describe(self, run_id: str) -> dict[str, Any] | None: ...

    async def exists(self, run_id: str) -> bool: ...

    async def list_runs(self, conversation_id: str) -> list[StoredRun]:
        """The conversation's runs, newest first."""
        ...

    async def conversations(self, limit: int = 200) -> list[dict[str, Any]]: ...

    def events(self, run_id: str, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """The run's events with ``seq > after``: past ones, then live ones until the end."""
        ...


class RunAdmin(Protocol):
    """What an operator and the node itself do: lifecycle, drain, page, prune, resume."""

    @property
    def active_count(self) -> int: ...

    @property
    def max_concurrent_runs(self) -> int | None:
        """Conversations with a live run at once (``None``: no cap here, workers' own)."""
        ...

    async def start(self) -> list[str]:
        """Prepare; returns the ids of runs a previous process left that were settled now."""
        ...

    async def readiness(self) -> list[str]:
        """What this node lacks to take runs (the database, a worker, …); empty: ready."""
        ...

    async def stop(self) -> None: ...

    @property
    def in_flight(self) -> int:
        """Runs this process executes (or has accepted to) that have not ended."""
        ...

    async def stop_taking_runs(self) -> None:
        """Start no more runs (draining); the runs in flight go on."""
        ...

    async def release_in_flight(self) -> list[str]:
        """Give up the runs still in flight; returns their ids.

        A run executed in this process ends ``interrupted`` (its readers get its ``final``
        event); a durable one stays pending, for a restarted or another worker to resume.
        """
        ...

    async def resume_run(self, run_id: str, *, any_version: bool = False) -> dict[str, Any]:
        """Queue again a known run no worker executes; its ``run_id``, ``status``,
        ``resumed_from_version`` and ``resumed_under_version``. Raises
        :class:`~dcbrain.exceptions.RunConflict` when there is nothing to resume."""
        ...

    def prune(self, older_than_s: float) -> int:
        """Delete the runs that ended more than ``older_than_s`` ago (blocking, any thread);
        returns how many."""
        ...

    async def page_runs(self, query: RunQuery) -> RunPage:
        """Runs newest first, filtered and paged as ``query`` says."""
        ...


class ApprovalsRole(Protocol):
    """Decide the calls runs wait on."""

    async def decide(self, run_id: str, call_id: str, *, approved: bool, reason: str = "",
                     args_hash: str | None = None, by: str = "user") -> dict[str, Any]:
        """Decide a call the run waits on (human approval); the decision's fields.

        Raises :class:`~dcbrain.exceptions.TFApprovalError` (``status`` 404 or 409).
        """
        ...


class RunService(RunsRole, RunAdmin, ApprovalsRole, Protocol):
    """Starts, supersedes, aborts and describes runs; streams their events: every role."""
