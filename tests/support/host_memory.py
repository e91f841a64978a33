"""The host's peak memory while a brain runs a hostile plan, measured in a child process.

Each case runs in a fresh Python process (``python tests/support/host_memory.py CASE
ISOLATION``): a :class:`~dcbrain.brain.DCBrain` with a scripted planner whose only plan is
the case's, and one tool. The parent reads the child's peak resident set (``VmHWM`` of
``/proc/PID/status``, which the kernel keeps for the process's whole life) just before it
exits, so the number is the host's peak, whatever the plan's sandbox process used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The hostile plans: what each would make the host build, unbounded.
CASES: dict[str, str] = {
    # a list of a million references to one empty list, passed to a tool 9 times: each
    # boundary copy makes a million distinct lists, and the trace keeps every copy
    "shared_references": (
        "empty = []\n"
        "refs = [empty for i in range(999990)]\n"
        "for i in range(9):\n"
        "    take(items=refs)\n"
        "'done'"
    ),
    # a branch scope and context per branch, before max_parallel applies
    "many_branches": "parallel(*[0 for i in range(999000)])",
    # a display of 256 literals evaluated again and again
    "set_displays": "[{" + ",".join(str(i) for i in range(256)) + "} for i in range(200000)]",
}

_ROOT = Path(__file__).resolve().parents[2]


def take(items: list[Any]) -> int:
    """A tool that keeps nothing."""
    return len(items)


def _peak_rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def _run_case(case: str, isolation: str) -> dict[str, Any]:
    from dcbrain.brain import DCBrain
    from dcbrain.llm.testing import ScriptedLLM

    source = CASES[case]
    reply = f"Here is my plan.\n```tf_plan\n{source}\n```"
    brain = DCBrain(default_llm=ScriptedLLM([reply]),
                    default_validate_llm=ScriptedLLM([{"is_solved": True, "suggestion": ""}]),
                    tools=[take], isolation=isolation,  # type: ignore[arg-type]
                    max_iterations=1, raise_on_timeout=False)
    before = _peak_rss_kib()
    result = brain.run(f"run case {case}")
    return {"case": case, "isolation": isolation, "baseline_kib": before,
            "peak_kib": _peak_rss_kib(), "status": result.status,
            "error": (result.last_error or "")[:500]}


def measure(case: str, isolation: str, *, timeout_s: float = 240.0) -> dict[str, Any]:
    """Run ``case`` in a child process; its report, with ``peak_kib`` the host's peak RSS."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(_ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), case, isolation],
        cwd=_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"case {case} ({isolation}) exited with {done.returncode}: "
                           f"{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


if __name__ == "__main__":
    print(json.dumps(_run_case(sys.argv[1], sys.argv[2])))
