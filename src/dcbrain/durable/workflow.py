"""The DBOS workflow of a run, and the queue it waits on.

A run is one workflow whose id is the run id (a run that waited for a person's decision
goes on in another, ``<run_id>~<execution>``). It waits on :data:`QUEUE_NAME`, partitioned
by conversation with at most one run per partition at a time across all workers: the runs
of a conversation execute one after the other, so a superseding run starts after the old
one's final event. Inputs and output are stored as portable JSON (never pickles).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from dcbrain.durable._dbos import DBOS, EXECUTOR_SLOT, WorkflowSerializationFormat
from dcbrain.durable.approvals import run_id_of
from dcbrain.exceptions import DurableRunError

WORKFLOW_NAME: Final = "dcbrain.run"
QUEUE_NAME: Final = "dcbrain_runs"

@DBOS.workflow(name=WORKFLOW_NAME, serialization_type=WorkflowSerializationFormat.PORTABLE)
async def run_workflow(conversation_id: str, question: str) -> dict[str, Any]:
    """Execute the run ``DBOS.workflow_id``; every failure reaches DBOS as an ``Exception``."""
    executor = EXECUTOR_SLOT.executor
    workflow_id = DBOS.workflow_id
    if executor is None or workflow_id is None:
        raise DurableRunError("this process does not execute runs (no brain configured)")
    run_id = run_id_of(workflow_id)  # a run that waited for approval goes on as <id>~<n>
    try:
        return await executor.execute(run_id, conversation_id, question)
    except asyncio.CancelledError:
        if executor.stopping:
            raise  # stays PENDING: this worker's next start, or a live peer, resumes it
        raise DurableRunError("the run was cancelled") from None
    except Exception:
        raise
    except BaseException as exc:  # KeyboardInterrupt, SystemExit, GeneratorExit, ...
        raise DurableRunError(f"{type(exc).__name__}: {exc}") from None
