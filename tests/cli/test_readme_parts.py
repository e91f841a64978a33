"""The README's part table names every command ``dcbrain --help`` lists."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from dcbrain.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def _cli_row() -> str:
    rows = [line for line in README.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `dcbrain` CLI |")]
    assert len(rows) == 1
    return rows[0]


def test_the_part_table_lists_every_command() -> None:
    group = typer.main.get_command(app)
    commands = set(getattr(group, "commands", {}))
    assert len(commands) > 5
    named = {word.split()[0] for word in re.findall(r"`([^`]+)`", _cli_row().split("|")[2])}
    assert commands - named == set()
