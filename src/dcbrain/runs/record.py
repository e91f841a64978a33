"""A run as every surface records and shows it: typed fields over the store's row
(:class:`~dcbrain.memory.StoredRun`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dcbrain.memory.run_store import EXECUTOR_ID, StoredRun

#: What a run's record shows operators beside its outcome (``None`` where it does not
#: apply): the worker that executes or executed it (``dcbrain worker --executor-id``; the
#: one whose outcome was recorded), and the application version a stranded run waits for.
OPERATOR_FIELDS = ("executor_id", "stranded_version")


@dataclass
class RunRecord:
    """One run: who asked what, how it stands, how it ended, and its place in its
    conversation's supersede chain. Stores keep it as ``status`` plus :meth:`data`."""

    run_id: str
    conversation_id: str | None
    question: str | None
    status: str
    reason: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    event_count: int = 0
    #: Calls the run asked a person about: each request's fields and its ``decision``
    #: (``None`` while it waits), in the order they were asked.
    approvals: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    #: The worker that executes or executed the run (a durable run's; ``None`` otherwise).
    executor_id: str | None = None
    #: Fields a surface keeps beside these (whether an abort was asked, …).
    extra: dict[str, Any] = field(default_factory=dict)

    _FIELDS = ("question", "reason", "result", "error", "superseded_by", "supersedes",
               "event_count", "approvals", EXECUTOR_ID)

    @classmethod
    def from_stored(cls, row: StoredRun) -> RunRecord:
        data = row.data
        extra = {key: value for key, value in data.items() if key not in cls._FIELDS}
        return cls(
            run_id=row.run_id, conversation_id=row.conversation_id,
            question=data.get("question"), status=row.status, reason=data.get("reason"),
            result=data.get("result"), error=data.get("error"),
            superseded_by=data.get("superseded_by"), supersedes=data.get("supersedes"),
            event_count=int(data.get("event_count") or 0),
            approvals=list(data.get("approvals") or []),
            created_at=row.created_at, updated_at=row.updated_at,
            executor_id=row.executor_id, extra=extra,
        )

    def data(self) -> dict[str, Any]:
        """What the store keeps beside the status."""
        operator = {} if self.executor_id is None else {EXECUTOR_ID: self.executor_id}
        return {**self.extra, **operator, "question": self.question, "reason": self.reason,
                "result": self.result, "error": self.error,
                "superseded_by": self.superseded_by, "supersedes": self.supersedes,
                "event_count": self.event_count, "approvals": self.approvals}

    def summary(self) -> dict[str, Any]:
        """The public shape of a run (``GET /v1/runs/{id}``), the same on every surface."""
        return {"run_id": self.run_id, "conversation_id": self.conversation_id,
                "status": self.status, "reason": self.reason, "question": self.question,
                "result": self.result, "error": self.error,
                "superseded_by": self.superseded_by, "supersedes": self.supersedes,
                "event_count": self.event_count, "approvals": self.approvals,
                "created_at": self.created_at, "updated_at": self.updated_at,
                EXECUTOR_ID: self.executor_id,
                **{name: self.extra.get(name) for name in OPERATOR_FIELDS
                   if name != EXECUTOR_ID}}

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        """The requests still waiting for a decision."""
        return [item for item in self.approvals if item.get("decision") is None]


def conversations(
    rows: Iterable[StoredRun],
    limit: int,
    live_status: Callable[[str], str | None] = lambda run_id: None,
) -> list[dict[str, Any]]:
    """Conversations that have runs, from ``rows`` newest first; ``live_status`` may
    know a run's status better than the store (a run still in flight)."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        cid = row.conversation_id
        if cid is None:
            continue
        question = row.data.get("question")
        entry = seen.get(cid)
        if entry is not None:
            entry["runs"] += 1
            entry["first_question"] = question  # older runs come later
        elif len(seen) < limit:
            seen[cid] = {"conversation_id": cid, "first_question": question,
                         "last_question": question,
                         "last_status": live_status(row.run_id) or row.status,
                         "updated_at": row.updated_at, "runs": 1}
    return list(seen.values())
