"""How a run is started, superseded, aborted, ended and recorded — for every surface.

Below the surfaces (``server``, ``durable``, ``mcp``, ``cli``) and above the brain: it
imports only :mod:`dcbrain.brain`, :mod:`dcbrain.events` and the foundation.
"""

from dcbrain.runs.execute import (
    RunnableBrain,
    RunOutcome,
    RunRequest,
    Sink,
    StartedRun,
    end_unstarted,
    execute_run,
    final_event,
)
from dcbrain.runs.policy import DEFAULT_SUPERSEDE_GRACE_S, SupersedePolicy
from dcbrain.runs.record import RunRecord, conversations
from dcbrain.runs.status import (
    LIVE_STATUSES,
    QUEUED,
    RUN_REASONS,
    RUN_STATUSES,
    RUNNING,
    STRANDED,
    TERMINAL_STATUSES,
    WAITING,
    RunReason,
    RunStatus,
)

__all__ = [
    "DEFAULT_SUPERSEDE_GRACE_S",
    "LIVE_STATUSES",
    "QUEUED",
    "RUNNING",
    "RUN_REASONS",
    "RUN_STATUSES",
    "STRANDED",
    "TERMINAL_STATUSES",
    "WAITING",
    "RunOutcome",
    "RunReason",
    "RunRecord",
    "RunRequest",
    "RunStatus",
    "RunnableBrain",
    "Sink",
    "StartedRun",
    "SupersedePolicy",
    "conversations",
    "end_unstarted",
    "execute_run",
    "final_event",
]
