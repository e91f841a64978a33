"""DBOS in this process: enqueueing runs, executing them (a worker), recovering dead workers.

DBOS is one per process, so is :class:`DurableEngine`. A worker launches DBOS with the run
workflow and the queue; an API-only node talks to the same database through a
``DBOSClient`` and never executes a run. Workers on PostgreSQL write a heartbeat every
:data:`HEARTBEAT_S`; a worker silent for :data:`DEAD_AFTER_S` is claimed by one live
worker, which hands its pending runs back to the queue (DBOS's recovery of an executor).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, Final

from dcbrain.durable._dbos import (
    DBOS,
    EXECUTOR_SLOT,
    PORTABLE_JSON,
    DBOSClient,
    DBOSConfig,
    EnqueueOptions,
    WorkflowSerializationFormat,
    recover_pending_workflows,
    wait_until_polled,
)
from dcbrain.durable._urls import dbos_url, is_postgres
from dcbrain.durable.approvals import run_id_of
from dcbrain.durable.control import ControlChannel
from dcbrain.durable.executor import RunExecutor
from dcbrain.durable.store import DurableStore, PostgresDurableStore
from dcbrain.durable.workflow import QUEUE_NAME, WORKFLOW_NAME
from dcbrain.exceptions import RunConflict

logger = logging.getLogger("dcbrain.durable")

#: Seconds between a worker's heartbeats.
HEARTBEAT_S: Final = 2.0
#: A worker whose heartbeat is older than this is dead: its runs go back to the queue.
DEAD_AFTER_S: Final = 15.0
#: How often a worker looks at the queue for runs to start (seconds).
QUEUE_POLL_S: Final = 0.1
#: Python's thread switch interval in a process that executes runs (default 5 ms): the
#: store writer, DBOS's queue thread and the control listener each wait for the run loop
#: to give the GIL back before they go on; with hundreds of runs on the loop, 5 ms per
#: hand-over added up to seconds of event latency and of queue lag.
SWITCH_INTERVAL_S: Final = 0.001
_PYTHON_SWITCH_INTERVAL_S: Final = 0.005
#: DBOS statuses of a workflow that stopped before its run ended: resuming queues it again.
RESUMABLE_WORKFLOWS: Final = frozenset({"CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
#: DBOS statuses of a workflow no worker executes or will start by itself.
ENDED_WORKFLOWS: Final = RESUMABLE_WORKFLOWS | {"SUCCESS", "ERROR"}


def application_version(config_text: str | bytes | None = None) -> str:
    """``dcbrain-<version>-<config hash>``: DBOS resumes a run only under the same version.

    A run in flight was planned with one brain (prompts, LLMs, tools); a worker with
    another dcbrain or another config must not replay it.
    """
    raw = config_text.encode() if isinstance(config_text, str) else (config_text or b"")
    return f"dcbrain-{version('dcbrain')}-{hashlib.sha256(raw).hexdigest()[:12]}"


def new_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class DurableEngine:
    """Enqueues runs and, with an ``executor``, executes them from the queue."""

    def __init__(
        self,
        db_url: str,
        store: DurableStore,
        *,
        app_version: str,
        executor: RunExecutor | None = None,
        concurrency: int = 16,
        executor_id: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.db_url = db_url
        self.store = store
        self.app_version = app_version
        self.executor = executor
        self.concurrency = concurrency
        postgres = is_postgres(db_url)
        self.executor_id = executor_id or (new_executor_id() if postgres else "local")
        if executor is not None:
            executor.executor_id = self.executor_id
            executor.requeue = self.enqueue  # a run whose approvals were decided meanwhile
        self.control = ControlChannel(db_url if postgres else None,
                                      executor.handle if executor is not None else None)
        self._client: DBOSClient | None = None
        self._launched = False
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._warming: threading.Thread | None = None
        self._switch_interval: float | None = None

    @property
    def executes(self) -> bool:
        return self.executor is not None

    def start(self) -> None:
        """Launch DBOS (a worker) or connect a client (API only); blocking.

        A worker's brain warms up meanwhile, in a thread of its own (:meth:`wait_warm`):
        a restarted server serves, and resumes its runs, without waiting for it.
        """
        if self.executor is None:
            self._client = DBOSClient(system_database_url=dbos_url(self.db_url),
                                      serializer=PORTABLE_JSON, lazy=True)
            return
        self._warming = threading.Thread(target=self._warm_up, name="dcbrain-warm-up",
                                         daemon=True)
        self._warming.start()
        EXECUTOR_SLOT.install(self.executor)
        if sys.getswitchinterval() == _PYTHON_SWITCH_INTERVAL_S:  # unless tuned already
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        config: DBOSConfig = {
            "name": "dcbrain",
            "system_database_url": dbos_url(self.db_url),
            "application_version": self.app_version,
            "executor_id": self.executor_id,
            "serializer": PORTABLE_JSON,
            "log_level": os.environ.get("DBOS_LOG_LEVEL", "WARNING"),
            "notification_listener_polling_interval_sec": QUEUE_POLL_S,
        }
        DBOS(config=config)
        DBOS.launch()
        self._launched = True
        DBOS.register_queue(QUEUE_NAME, worker_concurrency=self.concurrency,
                            partition_concurrency=1, polling_interval_sec=QUEUE_POLL_S,
                            on_conflict="always_update")
        if not wait_until_polled(QUEUE_NAME):
            logger.warning("DBOS did not start polling %s; the worker may start runs late",
                           QUEUE_NAME)
        self.control.start()
        if isinstance(self.store, PostgresDurableStore):
            self._heartbeat = threading.Thread(target=self._beat, args=(self.store,),
                                               name="dcbrain-heartbeat", daemon=True)
            self._heartbeat.start()

    def wait_warm(self, timeout_s: float | None = None) -> None:
        """Wait until the worker's brain has loaded what a first run loads lazily."""
        if self._warming is not None:
            self._warming.join(timeout_s)

    def _warm_up(self) -> None:
        assert self.executor is not None
        try:
            self.executor.warm_up()
        except Exception:  # the first run meets the same problem and reports it
            logger.exception("warming the brain up failed")

    def stop(self) -> None:
        """Stop executing; runs in flight stay pending and resume elsewhere or at restart."""
        self._stop.set()
        if self.executor is not None:
            self.executor.stopping = True
        self.control.close()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        if self._client is not None:
            self._client.destroy()
            self._client = None
        if self._launched:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            EXECUTOR_SLOT.install(None)
            self._launched = False
        if self.executor is not None:  # what the runs queued until now is stored
            try:
                self.executor.close()
            except Exception:
                logger.exception("events or journal rows were lost at shutdown")
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None

    # -- commands ------------------------------------------------------------------------

    def enqueue(self, run_id: str, conversation_id: str, question: str,
                workflow_id: str | None = None) -> None:
        """Queue the run (its id is the workflow id unless ``workflow_id`` says otherwise:
        a continuation's); it starts after the conversation's last."""
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": workflow_id or run_id,
            "queue_partition_key": conversation_id,
            "app_version": self.app_version,
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        if self._client is not None:
            self._client.enqueue(options, conversation_id, question)
        else:
            DBOS.enqueue_workflow_with_options(options, conversation_id, question)

    def cancel(self, run_id: str, workflow_id: str | None = None) -> None:
        """Tell DBOS the run is over (a queued run then never starts); ``workflow_id``
        for a continuation of the run."""
        if self._client is not None:
            self._client.cancel_workflow(workflow_id or run_id)
        else:
            DBOS.cancel_workflow(workflow_id or run_id)

    def send(self, message: dict[str, Any]) -> None:
        """A control message to the worker executing ``message["run_id"]``."""
        self.control.send(message)

    def workflow_status(self, run_id: str) -> str | None:
        """DBOS's status of the run's workflow (``ENQUEUED``, ``PENDING``, ``SUCCESS``, …)."""
        if self._client is not None:
            return str(self._client.retrieve_workflow(run_id).get_status().status)
        status = DBOS.get_workflow_status(run_id)
        return None if status is None else str(status.status)

    def resume(self, run_id: str, *, any_version: bool = False) -> None:
        """Put the run's stopped workflow (cancelled, or given up after repeated crashes) back
        on the run queue, where a worker resumes it from its journal.

        ``any_version``: resume even when the run's application version differs from the
        workers'. Raises :class:`RunConflict` when the workflow is queued or executing
        already, has ended, or does not exist.
        """
        record = self.store.get_run(run_id)
        workflow_id = str((record.data if record is not None else {}).get("workflow_id")
                          or run_id)  # a run that waited for approval goes on in another
        status = self._statuses(self._list(workflow_ids=[workflow_id])).get(workflow_id)
        if status is None:
            raise RunConflict(f"run {run_id} has no durable workflow to resume")
        if status not in RESUMABLE_WORKFLOWS:
            state = {"ENQUEUED": "is queued already", "DELAYED": "is queued already",
                     "PENDING": "is being executed by a worker"}.get(
                         status, f"has ended (its workflow is {status})")
            raise RunConflict(f"run {run_id} {state}: there is nothing to resume")
        if self._client is not None:
            self._client.resume_workflow(workflow_id, queue_name=QUEUE_NAME)
        else:
            DBOS.resume_workflow(workflow_id, queue_name=QUEUE_NAME)

    def workflow_statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """DBOS's status of each run's first workflow (runs without one are left out)."""
        return self._statuses(self._list(workflow_ids=list(run_ids)))

    def forget(self, run_ids: Sequence[str]) -> list[str]:
        """Delete DBOS's rows of the runs' workflows, each run's continuations too (status,
        inputs, outputs, steps, messages, events, streams) once all have ended; returns the
        runs done with. A run with a workflow still queued or executing is left out."""
        workflows = self._statuses(self._list(workflow_id_prefix=list(run_ids)))
        busy = {run_id_of(workflow_id) for workflow_id, status in workflows.items()
                if status not in ENDED_WORKFLOWS}
        done = [run_id for run_id in run_ids if run_id not in busy]
        ended = [workflow_id for workflow_id in workflows if run_id_of(workflow_id) in done]
        if ended:
            if self._client is not None:
                self._client.delete_workflows(ended)
            else:
                DBOS.delete_workflows(ended)
        return done

    def _list(self, *, workflow_ids: list[str] | None = None,
              workflow_id_prefix: list[str] | None = None) -> list[Any]:
        if self._client is not None:
            return self._client.list_workflows(
                workflow_ids=workflow_ids, workflow_id_prefix=workflow_id_prefix,
                load_input=False, load_output=False)
        return DBOS.list_workflows(workflow_ids=workflow_ids,
                                   workflow_id_prefix=workflow_id_prefix,
                                   load_input=False, load_output=False)

    @staticmethod
    def _statuses(found: Sequence[Any]) -> dict[str, str]:
        return {status.workflow_id: str(status.status) for status in found}

    # -- dead workers --------------------------------------------------------------------

    def _beat(self, store: PostgresDurableStore) -> None:
        while not self._stop.is_set():
            try:
                store.heartbeat(self.executor_id)
                for dead in store.claim_dead_workers(DEAD_AFTER_S):
                    if dead == self.executor_id:
                        continue
                    started = time.monotonic()
                    handles = recover_pending_workflows([dead])
                    logger.warning("worker %s is silent: %d run(s) back on the queue (%.2f s)",
                                   dead, len(handles), time.monotonic() - started)
            except Exception:
                logger.exception("heartbeat failed")
            self._stop.wait(HEARTBEAT_S)

