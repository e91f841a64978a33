"""The host memory budgets: what the host keeps for plan runs is paid for here.

Every value the host takes from a run and keeps or builds for it (a call's arguments and
result in the trace, the trace entry itself, the plan's value, the branch scopes of a
``parallel``, the intermediate results its chains add) is charged by its estimated size
when it arrives, twice: to the run's own :class:`HostBudget` (``Limits.max_host_mb``) and
to the one :class:`ProcessBudget` of the process, shared by all the runs it serves at
once (:func:`set_process_host_mb`). A charge past either ends that run with
:class:`HostMemoryExceeded` (``limit`` ``"max_host_mb"`` or ``"process_host_mb"``) and the
value is not kept; other runs go on. A run's charges to the process budget are given back
when the run ends (:meth:`HostBudget.close`).
"""

from __future__ import annotations

import threading

from dcbrain.tfplan.errors import HostMemoryExceeded

#: Default of the process-wide budget, in MiB.
DEFAULT_PROCESS_HOST_MB = 256

_MIB = 2**20


class ProcessBudget:
    """Bytes the host keeps for all the runs of this process at once, up to ``limit``."""

    __slots__ = ("_lock", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Pay ``size`` bytes; ``False`` (nothing paid) past the limit."""
        with self._lock:
            if self.used + size > self.limit:
                return False
            self.used += size
            return True

    def give_back(self, size: int) -> None:
        with self._lock:
            self.used = max(0, self.used - size)


_process = ProcessBudget(DEFAULT_PROCESS_HOST_MB * _MIB)


def set_process_host_mb(mb: int) -> None:
    """Bound what the host keeps for all the plan runs of this process at once, in MiB
    (default :data:`DEFAULT_PROCESS_HOST_MB`); what running runs hold stays charged."""
    if isinstance(mb, bool) or not isinstance(mb, int) or mb <= 0:
        raise ValueError(f"process_host_mb must be a positive number of MiB, got {mb!r}")
    with _process._lock:
        _process.limit = mb * _MIB


def process_budget() -> ProcessBudget:
    """The budget shared by all the runs of this process."""
    return _process


class HostBudget:
    """Bytes the host keeps for one plan run, up to ``limit``; thread-safe.

    ``shared`` (default: the process's budget) is charged alongside, until :meth:`close`
    gives back what the run holds; ``None``: no process-wide budget.
    """

    __slots__ = ("_lock", "closed", "limit", "shared", "used")

    def __init__(self, limit: int, shared: ProcessBudget | None = _process) -> None:
        self.limit = limit
        self.used = 0
        self.shared = shared
        self.closed = False
        self._lock = threading.Lock()

    def available(self) -> int:
        """Bytes that may still be charged (to this run and to the process)."""
        with self._lock:
            left = self.limit - self.used
        shared = self.shared
        if shared is not None and not self.closed:
            left = min(left, shared.limit - shared.used)
        return max(0, left)

    def charge(self, size: int, what: str) -> None:
        """Pay ``size`` bytes for ``what``; refused (nothing paid) past either limit."""
        size = max(0, size)
        with self._lock:
            if self.used + size > self.limit:
                refused = "max_host_mb"
            elif self.shared is not None and not self.closed and not self.shared.take(size):
                refused = "process_host_mb"
            else:
                self.used += size
                refused = ""
        if refused:
            raise self.refusal(what, refused)

    def refusal(self, what: str, limit: str = "") -> HostMemoryExceeded:
        """The error of a charge for ``what`` that does not fit (``limit``: which budget
        refused it; default: whichever is the tighter now)."""
        if not limit:
            shared = self.shared
            limit = "process_host_mb" if shared is not None and not self.closed \
                and shared.limit - shared.used < self.limit - self.used else "max_host_mb"
        if limit == "process_host_mb":
            assert self.shared is not None
            message = (f"{what}: the host would keep more than "
                       f"{self.shared.limit / _MIB:g} MiB for all the plan runs of this "
                       "process (process_host_mb)")
        else:
            message = (f"{what}: the host would keep more than {self.limit / _MIB:g} MiB "
                       "for this plan run (max_host_mb)")
        error = HostMemoryExceeded(message, budget=self)
        error.limit = limit
        return error

    def release(self, size: int) -> None:
        """Give back ``size`` bytes of values the host no longer keeps."""
        with self._lock:
            size = min(max(0, size), self.used)
            self.used -= size
            if self.shared is not None and not self.closed:
                self.shared.give_back(size)

    def close(self) -> None:
        """The run ended: give back its share of the process budget (idempotent); later
        charges count against the run's own limit only."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.shared is not None:
                self.shared.give_back(self.used)
