"""Run the real ``dcbrain`` entry point in a subprocess (``python -m dcbrain.cli``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from support.fake_openai import FakeOpenAIServer

RunCLI = Callable[..., subprocess.CompletedProcess[str]]
"""``run_cli("plan", "run", "x.tf", env={...}, cwd=...)``: exit code, stdout and stderr."""


def cli_runner(default_cwd: Path) -> RunCLI:
    """A :data:`RunCLI` that runs in ``default_cwd`` unless told otherwise.

    The child never sees ``OPENAI_API_KEY``; colours are off and the width is fixed.
    """

    def run(*args: str, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        environment.update({"NO_COLOR": "1", "COLUMNS": "120", "PYTHONIOENCODING": "utf-8"})
        environment.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "dcbrain.cli", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=cwd or default_cwd,
            env=environment,
            timeout=600,
        )

    return run


def ask_solved(run_cli: RunCLI, llm: FakeOpenAIServer, reply: str,
               *args: str) -> subprocess.CompletedProcess[str]:
    """``dcbrain ask ARGS`` (key in ``FAKE_API_KEY``) where the planner answers ``reply``
    and the validator calls it solved; the run must exit 0."""
    llm.reply(reply)
    llm.reply_json({"is_solved": True, "suggestion": ""})
    done = run_cli("ask", *args, env={"FAKE_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stderr
    return done
