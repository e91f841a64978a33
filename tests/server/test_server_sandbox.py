"""A plan that freezes or crashes its sandbox process leaves the server answering."""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.memory import Memory
from dcbrain.tfplan import Interpreter, Limits
from support.brain_scripts import plan
from support.sandbox import running_worker
from support.server_app import PATIENCE_S, Api, BrainScripts, Gate, ServeFn, direct_brain

# One C call that holds the interpreter lock for hours; only the kill at the limit ends it.
FROZEN_PLAN = "x = pow(3, 10**200000, 10**200000 + 7)\nreturn x"
GAVE_UP = "The computation did not finish in time."


class HealthProbe:
    """Asks ``/v1/health`` every 20 ms in a thread; keeps every answer's latency."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._probe)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        self._ready.wait(PATIENCE_S)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(PATIENCE_S)

    def _probe(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=PATIENCE_S) as http:
            http.get("/v1/health")  # connected before measuring
            self._ready.set()
            while not self._stop.is_set():
                started = time.perf_counter()
                response = http.get("/v1/health")
                self.latencies.append(time.perf_counter() - started)
                if response.status_code != 200:
                    self.failures.append(response.text)
                self._stop.wait(0.02)


def warm_up(api: Api, brains: BrainScripts) -> None:
    """One plan and one run first: measure plans, not the first run's one-time set-up."""
    Interpreter().run("0")
    brains.then(lambda memory: direct_brain(memory, "ready"))
    api.wait_for(api.send("warm-up", "are you there?"))


def frozen_brain(memory: Memory) -> DCBrain:
    planner = ScriptedLLM([plan(FROZEN_PLAN), GAVE_UP])
    return DCBrain(default_llm=planner, memory=memory,
                   limits=Limits(timeout_s=1.0, max_operations=10**18))


def crashing_brain(memory: Memory, gate: Gate) -> DCBrain:
    planner = ScriptedLLM([plan("hold()\nx = 0\nwhile True:\n    x += 1"), GAVE_UP])
    return DCBrain(default_llm=planner, memory=memory, tools=[gate.hold])


def test_health_answers_while_a_plan_freezes_its_worker(brains: BrainScripts,
                                                        serve: ServeFn) -> None:
    with serve() as api:
        warm_up(api, brains)
        brains.then(frozen_brain)
        with HealthProbe(api.base_url) as probe:
            run = api.wait_for(api.send("c1", "compute it"))
    assert run["status"] == "succeeded" and run["result"]["final_result"] == GAVE_UP
    assert "TimeLimitExceeded" in str(run["result"])
    assert probe.failures == [] and len(probe.latencies) > 20
    print(f"max /v1/health latency while frozen: {max(probe.latencies) * 1000:.1f} ms")
    assert max(probe.latencies) < 1.0


def test_health_answers_while_a_plan_crashes_its_worker(brains: BrainScripts,
                                                        serve: ServeFn) -> None:
    gate = Gate()
    with serve() as api:
        warm_up(api, brains)
        brains.then(lambda memory: crashing_brain(memory, gate))
        with HealthProbe(api.base_url) as probe:
            run_id = api.send_held("c1", "loop", gate)
            gate.opened.set()
            os.kill(running_worker(), signal.SIGSEGV)  # in its loop, past the call
            run = api.wait_for(run_id)
    assert run["status"] == "succeeded" and run["result"]["final_result"] == GAVE_UP
    assert "plan process crashed: signal 11" in str(run["result"])
    assert probe.failures == [] and probe.latencies
    print(f"max /v1/health latency around the crash: {max(probe.latencies) * 1000:.1f} ms")
    assert max(probe.latencies) < 1.0
