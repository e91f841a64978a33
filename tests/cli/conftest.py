"""Fixtures of the CLI tests: the real ``dcbrain`` entry point in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli_runner import RunCLI, cli_runner


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCLI:
    """``run_cli("plan", "run", "x.tf", env={...})``: exit code, stdout and stderr."""
    return cli_runner(tmp_path)
