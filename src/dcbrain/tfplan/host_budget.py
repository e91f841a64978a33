"""The host memory budget of one plan run: what the host keeps is paid for here.

Every value the host takes from a run and keeps (a call's arguments and result in the
trace, the plan's value, the intermediate results its chains add) is charged by its
estimated size when it arrives; a charge past ``Limits.max_host_mb`` ends the plan with
:class:`HostMemoryExceeded`, and the value is not kept.
"""

from __future__ import annotations

import threading

from dcbrain.tfplan.errors import HostMemoryExceeded


class HostBudget:
    """Bytes the host keeps for one plan run, up to ``limit``; thread-safe."""

    __slots__ = ("_lock", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def charge(self, size: int, what: str) -> None:
        """Pay ``size`` bytes for ``what``; refused (nothing paid) past the limit."""
        with self._lock:
            if self.used + size > self.limit:
                refused = True
            else:
                self.used += size
                refused = False
        if refused:
            raise HostMemoryExceeded(
                f"{what}: the host would keep more than {self.limit / 2**20:g} MiB for this "
                "plan run (max_host_mb)", budget=self)

    def release(self, size: int) -> None:
        """Give back ``size`` bytes of values the host no longer keeps."""
        with self._lock:
            self.used = max(0, self.used - size)
