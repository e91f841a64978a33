"""Run the real ``dcbrain`` entry point in a subprocess (``python -m dcbrain.cli``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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
