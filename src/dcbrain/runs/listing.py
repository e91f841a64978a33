"""Listing runs for operators: filters, a page size and an opaque cursor.

A page holds runs newest first, ordered by ``(created_at, run_id)``; its cursor is the
position of its last run, so the next page starts strictly after it. A run's creation
time never changes, so paging never repeats a run nor skips one, even while runs are
added (they land before the first page) or pruned.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from dcbrain.exceptions import InvalidRunQuery
from dcbrain.runs.status import RUN_STATUSES

DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 500


@dataclass(frozen=True)
class RunPosition:
    """Where a run sits in the newest-first order: the page cursor points at one."""

    created_at: float
    run_id: str

    def cursor(self) -> str:
        raw = json.dumps([repr(self.created_at), self.run_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def from_cursor(cls, cursor: str) -> RunPosition:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            created, run_id = json.loads(raw)
            created_at = float(created)
        except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
            raise InvalidRunQuery("cursor: not a cursor this server handed out (pass the "
                                  "next_cursor of the previous page as it is)") from None
        if not isinstance(run_id, str) or not math.isfinite(created_at):
            raise InvalidRunQuery("cursor: not a cursor this server handed out")
        return cls(created_at, run_id)


@dataclass(frozen=True)
class RunQuery:
    """Which runs to list: by status and conversation, ``limit`` at most, after ``after``."""

    statuses: tuple[str, ...] = ()
    conversation_id: str | None = None
    limit: int = DEFAULT_PAGE_SIZE
    after: RunPosition | None = None

    def __post_init__(self) -> None:
        unknown = [status for status in self.statuses if status not in RUN_STATUSES]
        if unknown:
            raise InvalidRunQuery(f"status: unknown status {unknown[0]!r} (one of "
                                  f"{', '.join(RUN_STATUSES)})")
        if not 1 <= self.limit <= MAX_PAGE_SIZE:
            raise InvalidRunQuery(f"limit: must be 1 to {MAX_PAGE_SIZE}, not {self.limit}")

    @property
    def before(self) -> tuple[float, str] | None:
        """The position the page starts strictly after, as stores take it."""
        return None if self.after is None else (self.after.created_at, self.after.run_id)

    @classmethod
    def parse(cls, status: str | None = None, conversation_id: str | None = None,
              limit: str | int | None = None, cursor: str | None = None) -> RunQuery:
        """A query from text parameters (``status`` may list several, comma-separated)."""
        statuses = tuple(s.strip() for s in status.split(",") if s.strip()) if status else ()
        if limit is None or limit == "":
            size = DEFAULT_PAGE_SIZE
        elif isinstance(limit, int):
            size = limit
        elif limit.isdigit() and len(limit) <= 6:
            size = int(limit)
        else:
            raise InvalidRunQuery(f"limit: must be a whole number 1 to {MAX_PAGE_SIZE}, "
                                  f"not {limit!r}")
        after = RunPosition.from_cursor(cursor) if cursor else None
        return cls(statuses, conversation_id or None, size, after)


@dataclass(frozen=True)
class RunPage:
    """One page of runs (their summaries) and the cursor of the next one (``None``: last)."""

    runs: Sequence[dict[str, Any]]
    next_cursor: str | None

    def to_dict(self) -> dict[str, object]:
        return {"runs": list(self.runs), "next_cursor": self.next_cursor}


class _Positioned(Protocol):
    @property
    def run_id(self) -> str: ...
    @property
    def created_at(self) -> float: ...


Row = TypeVar("Row", bound=_Positioned)


def page_of(rows: Sequence[Row], query: RunQuery,
            summary: Callable[[Row], dict[str, Any]]) -> RunPage:
    """The page of ``rows`` (fetched with ``limit + 1``: one more tells a next page exists)."""
    shown = rows[:query.limit]
    more = len(rows) > query.limit and shown
    cursor = RunPosition(shown[-1].created_at, shown[-1].run_id).cursor() if more else None
    return RunPage([summary(row) for row in shown], cursor)
