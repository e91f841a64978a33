"""Every example in ``examples/`` listed here runs as it is and exits cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

LISTED = [
    "brain_replan.py",
    "custom_memory.py",
    "dc_chains.py",
    "mcp_tools.py",
    "plan_execute.py",
    "structured_chain.py",
    "tool_chain.py",
]


@pytest.mark.parametrize("name", LISTED)
def test_example_runs(name: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=EXAMPLES.parent,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip()


def test_plan_execute_example_shows_every_path_and_its_diffs() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "plan_execute.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = completed.stdout
    for ending in (
        "completed: goal_met",
        "failed: no_plan",
        "failed: replan_budget",
        "failed: step_budget",
    ):
        assert f"= {ending}" in out
    assert "- ~~[2] fetch(url='https://example.org/compare-async-runtimes')~~" in out
    assert "+ [6] notify(message='could not finish: compare async runtimes')  (added)" in out
    assert "\x1b[" not in out  # not a terminal: plain text strike-through


def run_example(name: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return completed.stdout


def test_structured_chain_example_retries_and_shares_intermediate_results() -> None:
    out = run_example("structured_chain.py")
    assert "retrying: score: 'high' is not of type 'integer'" in out
    assert "headline: Strong Q3: growth up, churn down" in out
    assert '"score": 8, "headline": "Strong Q3: growth up, churn down"' in out
    assert "in 3 LLM calls" in out


def test_tool_chain_example_recovers_from_a_wrong_tool_call() -> None:
    out = run_example("tool_chain.py")
    assert "multiply({'a': 0.75, 'b': 'six'}) error: tool 'multiply': argument 'b'" in out
    assert "multiply({'a': 0.75, 'b': 6}) -> 4.5" in out
    assert "answer: Six pears cost 4.50 euros." in out


def test_dc_chains_example_replans_after_a_check_error_and_merges_the_result() -> None:
    out = run_example("dc_chains.py")
    assert "plan 1 failed: 2:11: chain 'sentiment' is missing required argument 'review'" in out
    assert "plan call 5 at 6:11: brief(sentiments={'mixed': 1, 'negative': 1, 'positive': 1})" \
        in out
    assert '"themes": [' in out
    assert "== intermediate results: brief, label, themes" in out
    assert "tokens in 7 LLM calls" in out


def test_brain_replan_example_shows_the_revision_and_its_diff() -> None:
    out = run_example("brain_replan.py")
    assert "validation: solved=False 0.9 is a guess" in out
    assert "-price = convert(amount=120, rate=0.9)" in out
    assert "+rate = lookup_rate(currency=\"EUR\")" in out
    assert "+ lookup_rate(currency='EUR')" in out
    assert "= succeeded: validated" in out
    assert "answer: {'price_eur': 110.4, 'rate': 0.92}" in out
