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


#: What an example's output shows (each example runs once, for all of them).
SHOWS: dict[str, list[str]] = {
    # every path and its diffs
    "plan_execute.py": [
        "= completed: goal_met", "= failed: no_plan", "= failed: replan_budget",
        "= failed: step_budget",
        "- ~~[2] fetch(url='https://example.org/compare-async-runtimes')~~",
        "+ [6] notify(message='could not finish: compare async runtimes')  (added)",
    ],
    # retries and shares intermediate results
    "structured_chain.py": [
        "retrying: score: 'high' is not of type 'integer'",
        "headline: Strong Q3: growth up, churn down",
        '"score": 8, "headline": "Strong Q3: growth up, churn down"',
        "in 3 LLM calls",
    ],
    # recovers from a wrong tool call
    "tool_chain.py": [
        "multiply({'a': 0.75, 'b': 'six'}) error: tool 'multiply': argument 'b'",
        "multiply({'a': 0.75, 'b': 6}) -> 4.5",
        "answer: Six pears cost 4.50 euros.",
    ],
    # replans after a check error and merges the result
    "dc_chains.py": [
        "plan 1 failed: 2:11: chain 'sentiment' is missing required argument 'review'",
        "plan call 5 at 6:11: brief(sentiments={'mixed': 1, 'negative': 1, 'positive': 1})",
        '"themes": [',
        "== intermediate results: brief, label, themes",
        "tokens in 7 LLM calls",
    ],
    # the revision and its diff
    "brain_replan.py": [
        "validation: solved=False 0.9 is a guess",
        "-price = convert(amount=120, rate=0.9)",
        "+rate = lookup_rate(currency=\"EUR\")",
        "+ lookup_rate(currency='EUR')",
        "= succeeded: validated",
        "answer: {'price_eur': 110.4, 'rate': 0.92}",
    ],
}
#: What it must not show: not a terminal, so strike-through is plain text.
HIDES: dict[str, list[str]] = {"plan_execute.py": ["\x1b["]}


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
    out = completed.stdout
    assert out.strip()
    for shown in SHOWS.get(name, []):
        assert shown in out
    for hidden in HIDES.get(name, []):
        assert hidden not in out
