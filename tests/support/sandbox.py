"""Finding and watching the sandbox worker that runs a test's plan (real processes)."""

from __future__ import annotations

import os
import time

from dcbrain.tfplan.sandbox import shared_pool

PATIENCE_S = 20.0


def busy_worker() -> int:
    """The pid of the (only) worker running a plan now."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        busy = shared_pool().busy_pids()
        if busy:
            return busy.pop()
        time.sleep(0.01)
    raise AssertionError("no worker became busy")


def running_worker() -> int:
    """The pid of the busy worker once it has computed for a while (0.2 s of CPU time),
    which a worker waiting for the host never does."""
    pid = busy_worker()
    start = _cpu_seconds(pid)
    deadline = time.monotonic() + PATIENCE_S
    while _cpu_seconds(pid) - start < 0.2:
        assert time.monotonic() < deadline, f"worker {pid} never ran"
        time.sleep(0.01)
    return pid


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` no longer exists (killed and reaped)."""
    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"process {pid} is still alive"
        time.sleep(0.01)
