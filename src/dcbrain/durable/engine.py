"""DBOS in this process: enqueueing runs, executing them (a worker), recovering dead workers.

DBOS is one per process, so is :class:`DurableEngine`. A worker launches DBOS with the run
workflow and the queue; an API-only node talks to the same database through a
``DBOSClient`` and never executes a run. Workers on PostgreSQL write a heartbeat every
:data:`HEARTBEAT_S`; a worker silent for ``dead_after_s`` (:data:`DEAD_AFTER_S`) is claimed
by one live worker of its application version, which hands its pending runs back to the
queue (DBOS's recovery of an executor). A worker claims nobody until it has itself been
beating for ``dead_after_s`` without a gap: after a database outage every heartbeat is old,
and the live workers get that long to beat again. Runs no live worker's version can resume
are marked stranded until one starts or an operator resumes them (``workers.py``,
:meth:`DurableEngine.resume`).

The queue is not polled tightly: a worker looks at it when ``NOTIFY dcbrain_queue`` says a
run was queued, handed back or ended (its control listener wakes DBOS's queue thread), and
otherwise every :data:`QUEUE_POLL_S`. At each look it takes runs only while it executes
fewer than its fair share (:func:`~dcbrain.durable.workers.fair_share`), so a burst of runs
spreads over the live workers.

Kept whole: :class:`DurableEngine` owns DBOS's one launch per process, and its
enqueueing, executing and recovering share that state (the queue, the executor id, the
heartbeat thread); the run workflow itself is in ``workflow.py``.
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
    FollowUps,
    WorkflowSerializationFormat,
    cap_dequeuing,
    database_errors,
    launch,
    migrate_system_database,
    quiet_background_threads,
    recover_pending_workflows,
    slow_internal_queues,
    stop_dequeuing,
    wait_until_polled,
    wake_dequeuing,
)
from dcbrain.durable._urls import dbos_url, is_postgres
from dcbrain.durable.approvals import run_id_of
from dcbrain.durable.control import QUEUE_CHANNEL, ControlChannel
from dcbrain.durable.executor import RunExecutor
from dcbrain.durable.store import DurableStore, PostgresDurableStore
from dcbrain.durable.workers import (
    PendingRun,
    WorkerRegistry,
    fair_share,
    mark_stranded,
    stranded,
)
from dcbrain.durable.workflow import QUEUE_NAME, WORKFLOW_NAME
from dcbrain.exceptions import DatabaseUnavailable, RunConflict
from dcbrain.memory import StoredRun
from dcbrain.runs import QUEUED, STRANDED, TERMINAL_STATUSES

logger = logging.getLogger("dcbrain.durable")

#: Seconds between a worker's heartbeats (at most; a quarter of ``dead_after_s`` if less).
HEARTBEAT_S: Final = 2.0
#: A worker whose heartbeat is older than this is dead: its runs go back to the queue
#: (``dcbrain worker --takeover-after``). A takeover completes within this plus one
#: heartbeat of the worker that claims it, and its recovery (about 8 s by default).
DEAD_AFTER_S: Final = 6.0
#: Seconds between an API node's attempts at migrating DBOS's schema while it cannot.
MIGRATE_RETRY_S: Final = 1.0
#: How often a worker looks at the queue when nothing woke it (seconds): a safety net
#: for a lost ``NOTIFY``; queued runs and ended ones wake the workers at once.
QUEUE_POLL_S: Final = 5.0
#: After a run ends, the queue is looked at again this long after (seconds): the end is
#: told from inside the run's workflow, before DBOS records it (see ``FollowUps``).
END_WAKES_S: Final = (0.1, 0.5, 1.5)
#: The same for one process on SQLite (woken by its own enqueues only).
LOCAL_QUEUE_POLL_S: Final = 0.5
#: How often DBOS's own queues (unused by dcbrain) are polled (seconds).
INTERNAL_QUEUE_POLL_S: Final = 30.0
#: Seconds between two looks for stranded runs (by a worker, with its heartbeat).
STRANDED_EVERY_S: Final = 10.0
#: How often DBOS flushes its own notifications, and looks for schedules (seconds).
NOTIFY_COALESCE_S: Final = 0.25
SCHEDULER_POLL_S: Final = 60.0
#: How often DBOS's waits for a notification fall back to reading the table (seconds).
NOTIFICATION_POLL_S: Final = 1.0
#: How often a draining worker looks whether its runs in flight have ended (seconds).
DRAIN_POLL_S: Final = 0.05
#: Python's thread switch interval in a process that executes runs (default 5 ms): the
#: store writer, DBOS's queue thread and the control listener each wait for the run loop
#: to give the GIL back before they go on; with hundreds of runs on the loop, 5 ms per
#: hand-over added up to seconds of event latency and of queue lag.
SWITCH_INTERVAL_S: Final = 0.001
_PYTHON_SWITCH_INTERVAL_S: Final = 0.005
#: DBOS statuses of a workflow that is queued or executing (or was, on a dead worker).
_ACTIVE_WORKFLOWS: Final = frozenset({"ENQUEUED", "PENDING", "DELAYED"})
#: DBOS statuses of a workflow whose run ended: there is nothing to resume.
_FINISHED_WORKFLOWS: Final = frozenset({"SUCCESS", "ERROR"})


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
        dead_after_s: float = DEAD_AFTER_S,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not dead_after_s > 0:
            raise ValueError("dead_after_s must be a positive number of seconds")
        self.concurrency = concurrency
        #: Seconds without a heartbeat after which a worker counts as dead; a worker beats
        #: every ``dead_after_s / 4`` seconds, or every ``HEARTBEAT_S`` if that is sooner.
        self.dead_after_s = dead_after_s
        self.heartbeat_s = min(HEARTBEAT_S, dead_after_s / 4)
        self.db_url = db_url
        self.store = store
        self.app_version = app_version
        self.executor = executor
        postgres = is_postgres(db_url)
        self.executor_id = executor_id or (new_executor_id() if postgres else "local")
        if executor is not None:
            executor.executor_id = self.executor_id
            executor.requeue = self.enqueue  # a run whose approvals were decided meanwhile
        self.control = ControlChannel(db_url if postgres else None,
                                      executor.handle if executor is not None else None,
                                      on_queue=self._wake_queue)
        self.workers = (WorkerRegistry(store) if isinstance(store, PostgresDurableStore)
                        else None)
        self._client: DBOSClient | None = None
        self._launched = False
        #: Set once DBOS's schema is known to be migrated (runs may be enqueued).
        self.schema_ready = threading.Event()
        self._migrating: threading.Thread | None = None
        #: Since when this worker's heartbeats succeed without a gap (``None``: failing
        #: now; at start, as if forever); it claims no dead worker before
        #: ``dead_after_s`` of that.
        self._beating_since: float | None = float("-inf")
        self._last_beat: float | None = None
        self._stranded_at = float("-inf")
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._end_wakes: FollowUps | None = None
        self._warming: threading.Thread | None = None
        self._switch_interval: float | None = None

    @property
    def executes(self) -> bool:
        return self.executor is not None

    def start(self, *, wait_for_queue: bool = True) -> None:
        """Launch DBOS (a worker) or connect a client (API only); blocking.

        ``wait_for_queue``: return only once DBOS polls the run queue, so that a worker
        that says it is ready starts a queued run at once (on a fresh database that takes
        up to a second after the launch). A server that executes its own runs passes
        ``False``: it answers meanwhile, and a run it queues starts when the polling does.

        A worker's brain warms up once DBOS is launched, in a thread of its own
        (:meth:`wait_warm`): a restarted server serves, and resumes its runs, without
        waiting for it.
        """
        if self.executor is None:
            # Raising, not retrying, on a lost connection: the request is answered 503.
            self._client = DBOSClient(system_database_url=dbos_url(self.db_url),
                                      serializer=PORTABLE_JSON, lazy=True,
                                      retry_connection_errors=False)
            try:  # at once when it can be: a started engine enqueues
                migrate_system_database(dbos_url(self.db_url))
                self.schema_ready.set()
            except Exception as exc:  # the database is not there yet: 503 until it is
                logger.warning("DBOS's schema cannot be migrated yet (%s); retrying", exc)
                self._migrating = threading.Thread(target=self._migrate,
                                                   name="dcbrain-migrate", daemon=True)
                self._migrating.start()
            return
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
            "notification_listener_polling_interval_sec": NOTIFICATION_POLL_S,
            # DBOS's events and streams, which dcbrain does not use: their notifications
            # are flushed this often (DBOS's default wakes a thread 100 times a second).
            "notification_coalesce_sec": NOTIFY_COALESCE_S,
            "scheduler_polling_interval_sec": SCHEDULER_POLL_S,
        }
        quiet_background_threads()
        DBOS(config=config)
        launch()  # DBOS's; migrates its schema, under DBOS's advisory lock
        self._launched = True
        self.schema_ready.set()
        poll_s = QUEUE_POLL_S if self.workers is not None else LOCAL_QUEUE_POLL_S
        # After the launch, not beside it: both are CPU-bound Python, so on a busy machine
        # a warm-up running meanwhile only delays the launch (and a server's first answer);
        # it overlaps the wait for DBOS's queue polling instead.
        self._warming = threading.Thread(target=self._warm_up, name="dcbrain-warm-up",
                                         daemon=True)
        self._warming.start()
        DBOS.register_queue(QUEUE_NAME, worker_concurrency=self.concurrency,
                            partition_concurrency=1, polling_interval_sec=poll_s,
                            on_conflict="always_update")
        slow_internal_queues(INTERNAL_QUEUE_POLL_S)
        if self.workers is not None:
            cap_dequeuing(QUEUE_NAME, self._fair_share)
        if wait_for_queue and not wait_until_polled(QUEUE_NAME):
            logger.warning("DBOS did not start polling %s; the worker may start runs late",
                           QUEUE_NAME)
        self.control.start()
        if self.executor is not None:
            self._end_wakes = FollowUps(self.notify_queue, END_WAKES_S)
            self.executor.on_end = self._run_ended
        if self.workers is not None:
            self._heartbeat = threading.Thread(target=self._beat, args=(self.workers,),
                                               name="dcbrain-heartbeat", daemon=True)
            self._heartbeat.start()
        else:  # one process: runs of an earlier version of it are stranded from the start
            try:
                self.report_stranded({self.app_version})
            except Exception:
                logger.exception("looking for stranded runs failed")

    def _release(self) -> None:
        """Hand this worker's pending runs back to the queue and forget its heartbeat."""
        assert self.workers is not None
        try:
            if self.in_flight():
                handles = recover_pending_workflows([self.executor_id])
                logger.warning("worker %s stops: %d run(s) handed back to the queue",
                               self.executor_id, len(handles))
                self.notify_queue()
            self.workers.forget(self.executor_id)
        except Exception as exc:  # they move once this worker's heartbeat is old
            logger.warning("worker %s could not hand its runs back (%s): a live peer takes "
                           "them after %g s", self.executor_id, exc, self.dead_after_s)
        finally:
            self.workers.close()

    def _migrate(self) -> None:
        """Migrate DBOS's schema from an API node too: whichever node starts first, no run
        is enqueued into a schema a worker has not finished (nodes start in any order)."""
        while not self._stop.is_set():
            try:
                migrate_system_database(dbos_url(self.db_url))
            except Exception as exc:
                logger.warning("DBOS's schema cannot be migrated yet (%s); retrying", exc)
                self._stop.wait(MIGRATE_RETRY_S)
                continue
            self.schema_ready.set()
            return

    def readiness(self) -> list[str]:
        """What this node lacks to take runs: the database, DBOS's schema, a live worker
        (an API node); empty when it is ready."""
        missing: list[str] = []
        if not self.schema_ready.is_set():
            missing.append("schema: DBOS's schema is not migrated yet")
        if not isinstance(self.store, PostgresDurableStore) or self.workers is None:
            return missing
        try:
            self.store.connections.probe()  # a connection of its own: never waits
            versions = (set(self.workers.versions(self.dead_after_s).values())
                        if self.executor is None else {self.app_version})
        except DatabaseUnavailable as exc:  # the probe is open: the details go to the log
            logger.warning("readiness: %s", exc)
            return ["database: the database is unavailable", *missing]
        if not versions:
            missing.append(f"workers: no worker has sent a heartbeat in the last "
                           f"{self.dead_after_s:g} s (start dcbrain worker)")
        elif self.app_version not in versions and None not in versions:
            live = ", ".join(sorted(v for v in versions if v))
            missing.append(f"workers: no live worker runs application version "
                           f"{self.app_version}, the one runs queued here get (live: {live}); "
                           "they would wait in the queue: start a worker of this version "
                           "(same dcbrain and config, or the same --app-version)")
        return missing

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

    def stop_taking_runs(self) -> None:
        """Start no more runs from the queue (they wait for another worker, or this one's
        next start); the runs in flight go on."""
        if not self._launched:
            return
        # A server does not wait for the polling at start: a queue polled only after this
        # would still start runs.
        wait_until_polled(QUEUE_NAME)
        if not stop_dequeuing(QUEUE_NAME):
            logger.warning("DBOS was not polling %s: nothing to stop", QUEUE_NAME)

    def in_flight(self) -> list[str]:
        """The ids of the runs this process executes now."""
        return [] if self.executor is None else list(self.executor.live)

    def drain(self, timeout_s: float, hurry: threading.Event | None = None) -> list[str]:
        """Stop taking runs and wait up to ``timeout_s`` (or until ``hurry`` is set) for
        the runs in flight to end; returns the ids still in flight."""
        self.stop_taking_runs()
        deadline = time.monotonic() + timeout_s
        hurry = hurry if hurry is not None else threading.Event()
        while self.in_flight() and time.monotonic() < deadline:
            if hurry.wait(min(DRAIN_POLL_S, max(0.0, deadline - time.monotonic()))):
                break
        return self.in_flight()

    def stop(self) -> None:
        """Stop executing; runs in flight stay pending and resume elsewhere or at restart.

        A worker on PostgreSQL hands the runs it still executes back to the queue at once
        and removes its heartbeat: a live peer takes them without waiting for this worker
        to count as dead.
        """
        self._stop.set()
        if self.executor is not None:
            self.executor.stopping = True
        if self._end_wakes is not None:
            self._end_wakes.close()
        self.control.close()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        if self._launched and self.workers is not None:
            self._release()
        if self._migrating is not None:
            self._migrating.join(timeout=5)
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
        a continuation's); it starts after the conversation's last.

        A new run is queued under this node's application version; a continuation under
        the version of the run's previous workflow, which is what its journal was written
        by (an API node of another version may take the decision that queues it)."""
        if not self.schema_ready.is_set():
            raise DatabaseUnavailable("DBOS's schema is not migrated yet: the run cannot be "
                                      "queued")
        app_version = self.app_version
        if workflow_id is not None and workflow_id != run_id:
            record = self.store.get_run(run_id)
            before = (record.previous_workflow_id if record else None) or run_id
            previous = self._workflow(before)
            if previous is not None and previous.app_version:
                app_version = str(previous.app_version)
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": workflow_id or run_id,
            "queue_partition_key": conversation_id,
            "app_version": app_version,
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        with database_errors("queueing a run"):
            if self._client is not None:
                self._client.enqueue(options, conversation_id, question)
            else:
                DBOS.enqueue_workflow_with_options(options, conversation_id, question)
        self.notify_queue()

    def cancel(self, run_id: str, workflow_id: str | None = None) -> None:
        """Tell DBOS the run is over (a queued run then never starts); ``workflow_id``
        for a continuation of the run."""
        with database_errors("cancelling a run"):
            if self._client is not None:
                self._client.cancel_workflow(workflow_id or run_id)
            else:
                DBOS.cancel_workflow(workflow_id or run_id)

    def send(self, message: dict[str, Any]) -> None:
        """A control message to the worker executing ``message["run_id"]``."""
        self.control.send(message)

    def workflow_status(self, run_id: str) -> str | None:
        """DBOS's status of the run's workflow (``ENQUEUED``, ``PENDING``, ``SUCCESS``, …)."""
        workflow = self._workflow(run_id)
        return None if workflow is None else str(workflow.status)

    def workflow_version(self, workflow_id: str) -> str | None:
        """The application version the workflow ``workflow_id`` runs under, if any."""
        workflow = self._workflow(workflow_id)
        return None if workflow is None else workflow.app_version

    def _workflow(self, run_id: str) -> Any:
        """DBOS's record of the run's workflow (``status``, ``app_version``, …), if any."""
        with database_errors("reading a run's workflow"):
            if self._client is not None:
                found = self._client.list_workflows(workflow_ids=[run_id], load_input=False,
                                                    load_output=False)
                return found[0] if found else None
            return DBOS.get_workflow_status(run_id)

    def workflow_statuses(self, run_ids: Sequence[str]) -> dict[str, str]:
        """DBOS's status of each run's first workflow (runs without one are left out)."""
        return self._statuses(self._list(workflow_ids=list(run_ids)))

    def forget(self, run_ids: Sequence[str]) -> list[str]:
        """Delete DBOS's rows of the runs' workflows, each run's continuations too (status,
        inputs, outputs, steps, messages, events, streams) once all have ended; returns the
        runs done with. A run with a workflow still queued or executing is left out."""
        workflows = self._statuses(self._list(workflow_id_prefix=list(run_ids)))
        busy = {run_id_of(workflow_id) for workflow_id, status in workflows.items()
                if status in _ACTIVE_WORKFLOWS}
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

    def resume(self, run_id: str, *, any_version: bool = False) -> StoredRun:
        """Put a live run that no worker executes back on the queue: a stranded run, or
        one whose workflow stopped (cancelled, or given up after repeated crashes).

        It resumes under its own application version, which a live worker must run; with
        ``any_version``, under this engine's version instead. Either way it executes from
        its start on its journal: finished calls are answered from the journal and never
        run again. Under another version the plan may differ from the journal's (other
        prompts, tools or models): a call the journal does not hold runs for the first
        time, and a different call where one is recorded fails the run
        (``JournalDivergence``). Returns the run's record; raises :class:`RunConflict`
        naming what stands in the way.
        """
        record = self.store.get_run(run_id)
        if record is None:
            raise RunConflict(f"run {run_id}: no such run")
        if record.status in TERMINAL_STATUSES:
            raise RunConflict(f"run {run_id} has ended ({record.status}): nothing to "
                                  "resume")
        workflow_id = record.workflow_id  # a continuation's
        workflow = self._workflow(workflow_id)
        if workflow is None:
            raise RunConflict(f"run {run_id} has no durable workflow to resume")
        status, version = str(workflow.status), workflow.app_version
        if status in _FINISHED_WORKFLOWS:
            raise RunConflict(f"run {run_id} has ended (its workflow is {status}): nothing "
                              "to resume")
        target = self.app_version if any_version else version
        live = self._live_versions()
        if live is not None and target not in live:
            known = ", ".join(sorted(v for v in live if v)) or "none"
            hint = "" if any_version else (
                "; resume it under a live worker's version with any_version "
                "(--any-version), if its plan may run there")
            raise RunConflict(f"run {run_id}: no live worker runs application version "
                              f"{target} (live: {known}){hint}")
        if live is None and target != version and target not in self._launched_versions():
            raise RunConflict(f"run {run_id}: application version {target} is unknown here "
                              "(no process of it ever ran on this database, so nothing would "
                              "execute the run); give --app-version of the server that runs "
                              "now")
        active = status in _ACTIVE_WORKFLOWS
        if active and record.status != STRANDED and (live is None or version in live):
            raise RunConflict(
                f"run {run_id} is {record.status} under version {version}, which a live "
                f"worker runs (a dead worker's runs move after {self.dead_after_s:g} s of "
                "silence): nothing to resume")
        if version == target:  # stranded, cancelled, or given up after repeated crashes
            self._requeue(workflow_id)
        else:
            if active:
                self.cancel(run_id, workflow_id)  # only a workflow that stopped can be rewound
            self._rewind(workflow_id, str(target), record.conversation_id)
        resumed = self.store.update_run(
            run_id, QUEUED, {"resumed_from_version": version, "resumed_under_version": target,
                             "resumed_at": time.time()},
            only_from=(STRANDED,))
        logger.warning("run %s resumed under application version %s (it started under %s)",
                       run_id, target, version)
        return resumed or self.store.get_run(run_id) or record

    def _requeue(self, workflow_id: str) -> None:
        if self._client is not None:
            self._client.resume_workflow(workflow_id, queue_name=QUEUE_NAME)
        else:
            DBOS.resume_workflow(workflow_id, queue_name=QUEUE_NAME)

    def _rewind(self, workflow_id: str, app_version: str, conversation_id: str | None) -> None:
        if self._client is not None:
            self._client.rewind_workflow(workflow_id, application_version=app_version,
                                         queue_name=QUEUE_NAME,
                                         queue_partition_key=conversation_id)
        else:
            DBOS.rewind_workflow(workflow_id, application_version=app_version,
                                 queue_name=QUEUE_NAME, queue_partition_key=conversation_id)

    def _launched_versions(self) -> set[str]:
        """The application versions a process ever launched on this database."""
        with database_errors("listing application versions"):
            versions = (self._client.list_application_versions() if self._client is not None
                        else DBOS.list_application_versions())
        return {str(v["version_name"]) for v in versions}

    def _live_versions(self) -> set[str | None] | None:
        """Versions of live workers (``None``: not known, no heartbeats in one process)."""
        if self.workers is None:
            return None
        return set(self.workers.versions(self.dead_after_s).values())

    # -- dead workers and stranded runs ----------------------------------------------------

    def report_stranded(self, live_versions: set[str | None]) -> dict[str, list[str]]:
        """Mark the runs none of ``live_versions`` can resume stranded; warns about each
        run newly stranded and returns those, by version."""
        # Only versions a worker ever launched can have started runs: in the steady state
        # that leaves the live ones, and no runs to list.
        unserved = [v["version_name"] for v in DBOS.list_application_versions()
                    if v["version_name"] not in live_versions]
        if not unserved or None in live_versions:
            return {}
        pending = [PendingRun(run_id_of(str(w.workflow_id)), w.app_version)
                   for w in DBOS.list_workflows(status="PENDING", name=WORKFLOW_NAME,
                                                app_version=unserved, load_input=False,
                                                load_output=False)]
        newly = mark_stranded(self.store, stranded(pending, live_versions))
        for app_version, run_ids in newly.items():
            logger.warning(
                "stranded run(s) %s: application version %s has no live worker to resume "
                "them; start a worker of that version, or resume them under another one "
                "(dcbrain runs resume RUN --any-version)", ", ".join(run_ids), app_version)
        return newly

    def _beat(self, workers: WorkerRegistry) -> None:
        while not self._stop.is_set():
            try:
                self._beat_once(workers)
            except DatabaseUnavailable as exc:
                if self._beating_since is not None:
                    logger.warning("heartbeat failed: %s; no worker is called dead until "
                                   "heartbeats have gone through for %g s again", exc,
                                   self.dead_after_s)
                self._beating_since = None
            except Exception:
                self._beating_since = None
                logger.exception("heartbeat failed")
            self._stop.wait(self.heartbeat_s)

    def _beat_once(self, workers: WorkerRegistry) -> None:
        silent = workers.heartbeat(self.executor_id, self.app_version, self.concurrency,
                                   silent_for_s=self.dead_after_s)
        now = time.monotonic()
        # A beat that failed, or came late (the database hung, this process was paused):
        # every peer may have been as silent for the same reason, so the grace restarts.
        late = self._last_beat is not None and now - self._last_beat > 2 * self.heartbeat_s
        self._last_beat = now
        if self._beating_since is None or late:
            if self._beating_since is None:
                logger.warning("heartbeats go through again: workers silent meanwhile get "
                               "%g s to beat before any is called dead", self.dead_after_s)
            self._beating_since = now
        if now - self._beating_since < self.dead_after_s:
            return
        for dead in workers.claim_dead(self.dead_after_s, self.app_version) if silent else ():
            if dead == self.executor_id:
                continue
            started = time.monotonic()
            handles = recover_pending_workflows([dead])
            logger.warning("worker %s is silent: %d run(s) back on the queue (%.2f s)",
                           dead, len(handles), time.monotonic() - started)
            if handles:
                self.notify_queue()
        if now - self._stranded_at >= STRANDED_EVERY_S:
            self._stranded_at = now
            self.report_stranded(set(workers.versions(self.dead_after_s).values()))

    # -- waking workers, sharing runs fairly ------------------------------------------------

    def notify_queue(self) -> None:
        """Tell every worker to look at the queue now (a run was queued, handed back or
        ended); best effort: a worker not told looks within :data:`QUEUE_POLL_S`."""
        if self.workers is None:  # one process: no one else to tell
            self._wake_queue()
            return
        try:  # the registry's connections never wait out an outage
            with self.workers.connections.use() as conn:
                conn.execute("SELECT pg_notify(%s, '')", (QUEUE_CHANNEL,))
        except Exception as exc:
            logger.debug("could not notify %s: %s", QUEUE_CHANNEL, exc)

    def _run_ended(self) -> None:
        """A run this worker executed ended: look at the queue now and again shortly after,
        once DBOS has recorded the end (its workflow no longer takes a slot)."""
        self.notify_queue()
        if self._end_wakes is not None:
            self._end_wakes.after_end()

    def _wake_queue(self) -> None:
        if self._launched:
            wake_dequeuing(QUEUE_NAME)

    def _fair_share(self) -> int:
        """The runs this worker may execute at once now (asked before each look at the
        queue): its share of the runs queued and executing, by concurrency; 0 while
        nothing is queued (DBOS then skips its look)."""
        if self.workers is None:
            return self.concurrency
        try:
            queued, executing, capacity = self.workers.load(
                QUEUE_NAME, self.app_version, 2 * self.heartbeat_s + 1)
        except Exception as exc:  # DBOS's own look meets the same and says so
            logger.debug("could not read the queue's load: %s", exc)
            return self.concurrency
        if queued == 0:
            return 0
        return fair_share(queued + executing, self.concurrency, capacity)
