"""What Python's cyclic collector costs dcbrain's runs, against the runs' own CPU time.

    python benchmarks/collector.py [--runs 600] [--warmup 100]

The workloads are the side-by-side harness's (``benchmarks/peers.py``): W1 (a plan calling
three tools, then a verdict) and W2 (the same with one tool failing once: the plan fails
and a revised one runs), each run asking a new question, with the fake model that answers
at once. For each isolation and workload it prints the host process's CPU per run (the
reference, measured in the same loop), the time the collector spent per run (measured with
``gc.callbacks``), its share of the run's CPU, and the collections of each generation per
100 runs. A run that leaves cycles behind shows here as gen1/gen2 collections: each scans
every object the process holds. Every run's result is checked.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from typing import Any

from _peers_variants import STATE, VARIANTS


class CollectorClock:
    """Time spent in the cyclic collector, and collections per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1


async def measure(variant_name: str, failing: bool, runs: int, warmup: int) -> dict[str, float]:
    variant = VARIANTS[variant_name]()
    variant.setup(0.0)
    variant.brain.warm_up()  # type: ignore[attr-defined]
    for index in range(warmup):
        STATE.failures_left = 1 if failing else 0
        variant.check(await variant.arun(index))
    gc.collect()
    clock = CollectorClock()
    gc.callbacks.append(clock)
    started = time.process_time()
    try:
        for index in range(runs):
            STATE.failures_left = 1 if failing else 0
            result = await variant.arun(10_000 + index)
            variant.check(result)
    finally:
        cpu = time.process_time() - started
        gc.callbacks.remove(clock)
    return {"cpu_ms": cpu / runs * 1e3, "gc_ms": clock.seconds / runs * 1e3,
            **{f"gen{g}": clock.collections[g] * 100 / runs for g in range(3)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    print("| dcbrain | workload | host CPU ms/run | collector ms/run | share of CPU "
          "| gen0/gen1/gen2 per 100 runs |")
    print("|---|---|---|---|---|---|")
    for name in ("dcbrain:process", "dcbrain:inprocess"):
        for workload, failing in (("W1", False), ("W2", True)):
            row = asyncio.run(measure(name, failing, args.runs, args.warmup))
            print(f"| {name.split(':')[1]} | {workload} | {row['cpu_ms']:.2f} "
                  f"| {row['gc_ms']:.3f} | {row['gc_ms'] / row['cpu_ms']:.1%} "
                  f"| {row['gen0']:.0f}/{row['gen1']:.0f}/{row['gen2']:.0f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
