"""What the HTTP server is configured with: one value, passed to :func:`create_app`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from dcbrain.runs import DEFAULT_SUPERSEDE_GRACE_S
from dcbrain.runs.retention import DEFAULT_CHECK_EVERY_S
from dcbrain.server.runs import DEFAULT_MAX_CONCURRENT_RUNS
from dcbrain.server.sse import DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_CLIENT

DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024
#: The ``Host`` names a server answers by default: loopback only (DNS rebinding).
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServerSettings:
    """The server's knobs (see :func:`dcbrain.server.create_app` for what each does).

    ``api_token`` ``None`` reads ``DCBRAIN_API_TOKEN``; ``retention_s`` ``None``: the
    runtime's ``[retention]``; ``output_type`` is the type answers are validated into
    (``GET /v1/schema``; ``None``: the runtime's); ``approval_sweep_s`` how often durable
    runs deny approvals nobody decided in time (``None``: every 5 s).
    """

    api_token: str | None = None
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    supersede_grace_s: float = DEFAULT_SUPERSEDE_GRACE_S
    allowed_hosts: Sequence[str] = LOOPBACK_HOSTS
    list_conversations: bool = False
    max_streams_per_client: int = DEFAULT_MAX_STREAMS_PER_CLIENT
    max_streams: int = DEFAULT_MAX_STREAMS
    retention_s: float | None = None
    retention_check_s: float = DEFAULT_CHECK_EVERY_S
    output_type: Any = None
    approval_sweep_s: float | None = None
