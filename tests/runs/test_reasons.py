"""Every status a run can have and every reason it can end with is documented once, and
the docs show those tables."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from dcbrain.brain.context import BrainReason
from dcbrain.runs import LIVE_STATUSES, RUN_REASONS, RUN_STATUSES, RunReason, RunStatus
from dcbrain.runs.status import (
    generated_reasons,
    generated_statuses,
    reasons_reference,
    statuses_reference,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def test_the_table_is_the_type() -> None:
    assert set(RUN_REASONS) == set(get_args(RunReason))


def test_every_reason_a_brain_gives_is_a_run_reason() -> None:
    assert set(get_args(BrainReason)) <= set(RUN_REASONS)


def test_the_server_docs_show_the_generated_table() -> None:
    shown = generated_reasons(DOCS.read_text(encoding="utf-8"))
    assert shown == reasons_reference(), (
        "docs/server.md is out of date: python -m dcbrain.runs.status docs/server.md")


def test_every_status_is_described_and_a_stranded_run_is_live() -> None:
    assert set(RUN_STATUSES) == set(get_args(RunStatus))
    assert "stranded" in LIVE_STATUSES  # it can still be resumed or aborted


def test_the_server_docs_show_the_generated_statuses() -> None:
    shown = generated_statuses(DOCS.read_text(encoding="utf-8"))
    assert shown == statuses_reference(), (
        "docs/server.md is out of date: python -m dcbrain.runs.status docs/server.md")
