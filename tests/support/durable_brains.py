"""Brains for durable-run tests: three tools that count their calls in files.

A call appends one line to ``<counters>/<tool>.started`` when it begins and to
``<tool>.finished`` when it returns, so a test (or another process) can tell which calls
ran, how often, and which were cut off by a crash.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.server_app import Api

THREE_STEPS = "a = step_one(x=1)\nb = step_two(x=a)\nc = step_three(x=b)\nreturn c"


class CountingTools:
    """``step_one``/``step_two``/``step_three`` (each adds 1 after ``delay_s``), counted."""

    def __init__(self, counters: Path, delay_s: float = 0.0) -> None:
        self.counters = counters
        self.delay_s = delay_s
        self.hold: threading.Event | None = None  # set: step_two waits for it
        self.hold_s = 30.0  # at most this long
        self.jitter: random.Random | None = None  # set: each call sleeps up to 20 ms more
        self.entered = threading.Event()
        #: Tools whose calls wait for a person's approval (``Tool(requires_approval=...)``),
        #: and how long each waits before it is denied.
        self.approval: set[str] = set()
        self.approval_timeout_s: float | None = None
        counters.mkdir(parents=True, exist_ok=True)

    def send_held(self, api: Api, cid: str, content: str) -> str:
        """Send ``content`` through ``api``; its run id once its ``step_two`` has started."""
        run_id = api.send(cid, content)
        assert self.entered.wait(20)
        return run_id

    def count(self, name: str, phase: str) -> int:
        path = self.counters / f"{name}.{phase}"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def _mark(self, name: str, phase: str) -> None:
        with (self.counters / f"{name}.{phase}").open("a") as out:
            out.write(f"{time.time()}\n")

    def _call(self, name: str, x: int) -> int:
        self._mark(name, "started")
        if name == "step_two":
            self.entered.set()
            if self.hold is not None:
                self.hold.wait(self.hold_s)
        time.sleep(self.delay_s + (self.jitter.uniform(0, 0.02) if self.jitter else 0.0))
        self._mark(name, "finished")
        return x + 1

    def tools(self) -> list[Callable[..., Any] | Tool]:
        def step_one(x: int) -> int:
            """Add one."""
            return self._call("step_one", x)

        def step_two(x: int) -> int:
            """Add one."""
            return self._call("step_two", x)

        def step_three(x: int) -> int:
            """Add one."""
            return self._call("step_three", x)

        return [Tool(func, requires_approval=True, approval_timeout_s=self.approval_timeout_s)
                if func.__name__ in self.approval else func
                for func in (step_one, step_two, step_three)]

    def brain(self, source: str = THREE_STEPS, **kwargs: Any) -> DCBrain:
        planner = ScriptedLLM([plan(source)])
        validator = ScriptedLLM([verdict(True)])
        return DCBrain(default_llm=planner, default_validate_llm=validator,
                       tools=self.tools(), **kwargs)
