"""benchmarks/peers.py runs each workload, checks each batch's result and compares dcbrain
with the best peer of the same run (tiny sizes; peers not installed are skipped);
benchmarks/collector.py measures the collector's cost of the same workloads."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "peers.py"
TINY = ["--runs", "2", "--repeats", "1", "--warmup", "1", "--w3-runs", "3",
        "--w3-latency", "0.001", "--w3-repeats", "2", "--no-import"]


def run(frameworks: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), "--frameworks", frameworks, *TINY],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def rows(out: str, name: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in out.splitlines() if line.startswith(f"| {name} ")]


def test_dcbrain_in_both_isolations_runs_every_workload() -> None:
    out = run("dcbrain")
    for name in ("dcbrain (sandbox process, default)", "dcbrain (in process)"):
        main, details, _spread = rows(out, name)
        # W1 CPU and wall, W2 CPU, W3 wall and memory measured
        assert all(float(main[i]) > 0 for i in (1, 2, 3, 4, 6)), main
        # one run's model calls / tool executions / tool errors: W1, then W2 (one failure,
        # a revised plan)
        assert details[-2:] == ["2/3/0", "3/4/1"], details
    assert "Ratio of dcbrain" not in out  # no peer measured, nothing to compare with


@pytest.mark.parametrize("framework", ["pydantic_ai", "smolagents", "langgraph",
                                       "openai_agents"])
def test_a_peer_runs_the_same_workload(framework: str) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _peers_variants import MODULES, VARIANTS
    finally:
        sys.path.remove(str(BENCHMARKS))
    if importlib.util.find_spec(MODULES[framework]) is None:
        pytest.skip(f"{framework} is not installed (the bench extra)")
    out = run(f"dcbrain:inprocess,{framework}")
    details = rows(out, VARIANTS[framework]().name)[1]
    assert details[-2:] == ["2/3/0", "3/4/1"], details
    assert "dcbrain (in process) / best peer" in out


@pytest.fixture
def peers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("peers_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry(name: str, w1: float, w2: float, wall: float, memory: float) -> dict[str, Any]:
    def workload(cpu: float) -> dict[str, Any]:
        return {"cpu_ms": cpu, "wall_ms": cpu, "cpu_ms_all": [cpu], "wall_ms_all": [cpu]}

    return {"name": name, "concurrency": "asyncio", "framework": name.split()[0],
            "w12": {"w1": workload(w1), "w2": workload(w2), "counts": {}, "build_ms": 1.0},
            "w3": {"wall_s": wall, "wall_s_all": [wall], "cpu_s": wall,
                   "peak_tree_rss_mb": memory}}


def test_ratios_and_goals_are_against_the_peers_of_the_run(peers: Any) -> None:
    results = {"dcbrain:process": entry("dcbrain (sandbox process, default)", 3.0, 5.0, 1.2,
                                        500.0),
               "pydantic_ai": entry("pydantic_ai", 4.0, 6.0, 1.0, 100.0),
               "langgraph": entry("langgraph react", 5.0, 4.0, 1.5, 600.0)}
    values = {k: peers.values_of(r) for k, r in results.items()}
    assert peers.goals(values) == [
        ("W1 CPU at most 0.8x the best peer's: 0.75x", True),
        ("W2 CPU at most 1.0x the best peer's: 1.25x", False),
        ("W3 wall time the lowest (to the best peer): 1.20x", False),
        ("W3 memory at most the highest peer's: 0.83x", True),
    ]
    args = argparse.Namespace(rounds=1, repeats=1, runs=1, w3_repeats=1)
    out = peers.render(results, args)
    ratio = rows(out, "dcbrain (sandbox process, default) / best peer")[0]
    assert ratio[1] == "0.75x (pydantic_ai)" and ratio[3] == "1.25x (langgraph react)"
    assert "- W2 CPU at most 1.0x the best peer's: 1.25x: NOT met" in out


def test_the_collector_benchmark_measures_both_workloads_in_both_isolations() -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "collector.py"), "--runs", "3",
                           "--warmup", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    measured = [[c.strip() for c in line.strip("|").split("|")]
                for line in done.stdout.splitlines() if line.startswith("| process ")
                or line.startswith("| inprocess ")]
    assert [row[:2] for row in measured] == [["process", "W1"], ["process", "W2"],
                                             ["inprocess", "W1"], ["inprocess", "W2"]]
    assert all(float(row[2]) > 0 and float(row[3]) >= 0 for row in measured), measured
