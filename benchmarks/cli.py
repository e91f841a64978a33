"""How fast the ``dcbrain`` command starts, against ``python -c pass`` measured in the same run.

Each command runs ``--repeat`` times in a fresh process (``python -m dcbrain.cli …``, as
the ``dcbrain`` script does); the median wall time is reported with its ratio to the
median of ``python -c pass``. Goal: ``dcbrain --help`` at most 5× ``python -c pass``.
Run:

    python benchmarks/cli.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_HELP_RATIO = 5.0


def wall_time(argv: list[str], cwd: Path, repeat: int) -> float:
    """Median seconds of ``argv`` run ``repeat`` times (it must exit 0)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    python = [sys.executable]
    dcbrain = [sys.executable, "-m", "dcbrain.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "plan.tf").write_text("print(6 * 7)\n", encoding="utf-8")
        commands = {
            "python -c pass": [*python, "-c", "pass"],
            "dcbrain --help": [*dcbrain, "--help"],
            "dcbrain plan check": [*dcbrain, "plan", "check", "plan.tf"],
            "dcbrain plan run": [*dcbrain, "plan", "run", "plan.tf"],
        }
        wall_time(commands["dcbrain --help"], cwd, 1)  # warm the file cache and .pyc files
        seconds = {name: wall_time(argv, cwd, args.repeat) for name, argv in commands.items()}
    reference = seconds["python -c pass"]
    ratios = {name: value / reference for name, value in seconds.items()}
    if args.json:
        print(json.dumps({"seconds": {k: round(v, 4) for k, v in seconds.items()},
                          "ratio": {k: round(v, 2) for k, v in ratios.items()},
                          "goal_help_ratio": GOAL_HELP_RATIO}))
    else:
        for name in commands:
            print(f"{name:20} {seconds[name] * 1000:7.1f} ms  {ratios[name]:5.1f}×")
        verdict = "met" if ratios["dcbrain --help"] <= GOAL_HELP_RATIO else "missed"
        print(f"goal: dcbrain --help ≤ {GOAL_HELP_RATIO:g}× python -c pass ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
