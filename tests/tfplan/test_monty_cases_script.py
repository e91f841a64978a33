"""The comparison script against an outside test-case corpus sorts cases as it says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "monty_cases.py"

CASES = {
    "match_value.py": "x = [1, 2]\nx.append(3)\nx",
    "match_error.py": "def f(a):\n    return a\nf()\n# Raise=TypeError(...)",
    "earlier.py": "print(not_defined_anywhere)",
    "outside.py": "import os\nos.getcwd()",
    "skipped.py": "# call-external\nresult = ext()",
    "self_containing.py": "a = []\na.append(a)\na",
}


def test_script_reports_matches_and_differences(tmp_path: Path) -> None:
    for name, source in CASES.items():
        (tmp_path / name).write_text(source)
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True,
                          text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert "6 cases: 1 need monty's host hooks, 1 outside tf_plan, 4 inside" in lines
    assert ("inside: 2 match CPython, 1 answered earlier by the checker or a limit, "
            "1 return a value that contains itself (not plain data), 0 mismatch") in lines
