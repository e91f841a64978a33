"""SIGTERM while a run waits for a person: the server drains without waiting for the
decision and without ending the run; after a restart the run still waits, with nothing
lost, and finishes once approved."""

from __future__ import annotations

import signal
from collections.abc import Callable

from support.durable_processes import Cluster, assert_approved_once

TOOLS = ("step_one", "step_two", "step_three")


def test_sigterm_during_an_approval_wait_leaves_the_run_waiting_with_nothing_lost(
    cluster: Callable[..., Cluster]
) -> None:
    nodes = cluster(delay_s=0.0, approval=("step_two",))
    first = nodes.serve("--drain-timeout", "600")
    run_id = nodes.send()
    nodes.wait_status([run_id], "waiting")
    first.send_signal(signal.SIGTERM)
    # it drains without waiting the 600 s for a decision nobody has taken
    # (uvicorn re-raises the signal it caught)
    assert first.wait(timeout=120) in (0, -signal.SIGTERM), nodes.log("serve").read_text()
    assert nodes.started(*TOOLS) == [1, 0, 0]
    nodes.serve("--drain-timeout", "600")
    waiting = nodes.run(run_id)
    assert waiting["status"] == "waiting", waiting  # not interrupted, not lost
    run, stream = nodes.approve_and_finish(run_id, "step_two")
    nodes.close()
    assert_approved_once(nodes, run, stream)
    assert '"status":"interrupted"' not in stream
