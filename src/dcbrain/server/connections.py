"""How many connections the HTTP server holds, and how long a request may take to arrive.

uvicorn reads a request's head with no deadline and accepts connections until the process
runs out of file descriptors: a few hundred clients that connect and send half a request
line (slowloris) would leave no descriptor for anyone else.
:func:`~dcbrain.server.protocol.uvicorn_config` serves with a protocol that

- closes a connection whose request head (request line and headers) has not arrived
  within ``head_timeout_s`` of connecting or of the previous response;
- closes a connection whose request body has not fully arrived within ``body_timeout_s``
  of its head;
- holds at most ``max_connections``: beyond it a new connection closes the one that has
  waited longest for a request head, or, when every connection is busy with a request,
  is answered ``503`` and closed.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Final

#: Seconds the runs in flight get to finish after SIGTERM (``--drain-timeout``); here, not
#: in :mod:`dcbrain.server.drain`, so the command line reads it without loading uvicorn.
DEFAULT_DRAIN_TIMEOUT_S: Final = 30.0

#: File descriptors kept for everything but connections (stores, logs, sandbox pipes).
FD_RESERVE = 256


@dataclass(frozen=True)
class ConnectionLimits:
    """Bounds on the server's connections; validates itself."""

    #: Open connections at most (waiting, reading or answering a request, streaming).
    max_connections: int = 1024
    #: Seconds for a request head to arrive after connecting or after the last response.
    head_timeout_s: float = 10.0
    #: Seconds for a request body to arrive after its head.
    body_timeout_s: float = 30.0
    #: Bytes of a request head (request line and headers) still incomplete; beyond, ``400``.
    max_head_bytes: int = 16 * 1024
    #: Connections the kernel queues before the server accepts them; also how many the
    #: server accepts at once (each holds a file descriptor before it is counted).
    backlog: int = 128

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_head_bytes", "backlog"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("head_timeout_s", "body_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, not {value}")


def fit_open_file_limit(limits: ConnectionLimits) -> ConnectionLimits:
    """``limits`` with ``max_connections`` fitting this process's open-file limit.

    Raises the soft limit toward the hard one when it is too low; when even the hard
    limit is too low, lowers ``max_connections`` (with a warning on stderr).
    """
    try:
        import resource
    except ImportError:  # not POSIX: no limit to fit
        return limits
    wanted = limits.max_connections + limits.backlog + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return limits
    fitting = max(1, soft - limits.backlog - min(FD_RESERVE, soft // 4))
    sys.stderr.write(f"warning: the open-file limit ({soft}, ulimit -n) leaves room for "
                     f"{fitting} connections, not {limits.max_connections}; serving at most "
                     f"{fitting}\n")
    return replace(limits, max_connections=fitting)


__all__ = ["FD_RESERVE", "ConnectionLimits", "fit_open_file_limit"]
