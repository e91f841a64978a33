"""The contract between dcbrain and the DBOS it is pinned to.

``dcbrain.durable._dbos`` reaches past DBOS's public API in a few places; each test here
fails, naming the place, when a DBOS upgrade moves one of them.
"""

from __future__ import annotations

import ast
import inspect
import re
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

from dcbrain.durable import _dbos
from dcbrain.durable.workflow import QUEUE_NAME
from support.durable_brains import CountingTools
from support.durable_harness import Backend, running_engine, submit, wait_until_ended

ROOT = Path(__file__).resolve().parents[2]


def _pinned_range() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [d for d in project["dependencies"] if re.match(r"dbos\b", d)]
    return pin


def test_the_installed_dbos_is_the_minor_version_the_adapter_was_checked_against() -> None:
    pin = _pinned_range()
    lower = re.search(r">=(\d+)\.(\d+)", pin)
    upper = re.search(r"<(\d+)\.(\d+)", pin)
    assert lower and upper, f"dbos must be pinned to one minor version, not {pin!r}"
    installed = tuple(int(part) for part in version("dbos").split(".")[:2])
    assert (int(lower[1]), int(lower[2])) <= installed < (int(upper[1]), int(upper[2])), (
        f"dbos {version('dbos')} is outside {pin!r}: check dcbrain/durable/_dbos.py against "
        "it (this module's tests), then move the pin")


def test_dbos_still_recovers_an_executor_through_the_private_method_the_adapter_calls() -> None:
    recover = getattr(_dbos.DBOS, "_recover_pending_workflows", None)
    assert recover is not None, "DBOS._recover_pending_workflows is gone: dead workers' " \
        "runs are no longer handed back to the queue (durable/_dbos.py)"
    assert list(inspect.signature(recover).parameters) == ["executor_ids"], (
        "DBOS._recover_pending_workflows changed its parameters (durable/_dbos.py)")


def test_the_portable_serializer_is_the_one_dbos_names_portable() -> None:
    from dbos import WorkflowSerializationFormat

    assert _dbos.PORTABLE_JSON.name() == "portable_json"
    assert WorkflowSerializationFormat.PORTABLE.value == "portable"


def test_a_launched_worker_sees_dbos_poll_its_queue_and_recovers_an_unknown_executor(
    backend: Backend, counting: CountingTools
) -> None:
    # The adapter recognises DBOS's queue thread by name; a renamed thread would make
    # every worker announce readiness before it polls.
    with running_engine(backend, counting.brain):
        assert _dbos.queue_is_polled(QUEUE_NAME), (
            f"no thread named {_dbos.QUEUE_THREAD_PREFIX}{QUEUE_NAME}: DBOS renamed its "
            "queue thread (durable/_dbos.py QUEUE_THREAD_PREFIX)")
        assert _dbos.recover_pending_workflows(["no-such-executor"]) == []


def test_a_draining_worker_stops_dbos_polling_its_queue_through_the_threads_stop_event(
    backend: Backend, counting: CountingTools
) -> None:
    # The adapter sets the stop event DBOS passes its queue threads as first argument.
    with running_engine(backend, counting.brain):
        assert _dbos.stop_dequeuing(QUEUE_NAME), f"no thread polls {QUEUE_NAME}"
        deadline = time.monotonic() + 30
        while _dbos.queue_is_polled(QUEUE_NAME):
            assert time.monotonic() < deadline, (
                "DBOS's queue thread ignored its stop event: a draining worker would go on "
                "taking runs (durable/_dbos.py stop_dequeuing)")
            time.sleep(0.02)
        assert not _dbos.stop_dequeuing(QUEUE_NAME)  # nothing left to stop


def test_no_module_but_the_adapter_imports_dbos() -> None:
    importers = []
    for path in (ROOT / "src" / "dcbrain").rglob("*.py"):
        if path.name == "_dbos.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and
                     not node.level else [])
            if any(name == "dbos" or name.startswith("dbos.") for name in names):
                importers.append(str(path.relative_to(ROOT)))
    assert importers == [], f"import DBOS through dcbrain.durable._dbos, not in {importers}"




def test_a_woken_queue_thread_goes_on_polling_and_starts_what_was_queued(
    backend: Backend, counting: CountingTools
) -> None:
    # Waking ends the queue thread's wait without setting its stop event: a wait that
    # reported the wake-up as a stop would end the thread, and no run would ever start.
    with running_engine(backend, counting.brain) as engine:
        for _ in range(3):
            assert _dbos.wake_dequeuing(QUEUE_NAME), (
                "the queue thread's stop event is not the adapter's WakeableEvent: DBOS no "
                "longer makes it in launch (durable/_dbos.py launch)")
        run_id = submit(engine, backend.store, "c1", "q")
        record = wait_until_ended(backend.store, run_id)
        assert _dbos.queue_is_polled(QUEUE_NAME)
    assert record.status == "succeeded"


def test_dbos_still_has_the_background_settings_an_idle_worker_lowers() -> None:
    from dbos import _scheduler, _workflow_commands

    assert hasattr(_workflow_commands, "_BACKGROUND_JOBS_INTERVAL_SEC"), (
        "DBOS renamed its background jobs' interval: idle workers run them every second "
        "(durable/_dbos.py quiet_background_threads)")
    assert hasattr(_scheduler, "_STARTUP_FAST_POLL_DURATION_SEC"), (
        "DBOS renamed its schedule poll at start (durable/_dbos.py quiet_background_threads)")
