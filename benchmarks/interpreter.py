"""tf_plan interpreter speed against CPython, measured in the same run.

    python benchmarks/interpreter.py [--repeat N]

Prints, per script, the best-of-N time under CPython (``exec`` of the same source), under
dcbrain's interpreter, and the ratio (the runners take turns, so load on the machine
slows them alike); then the geometric mean of the ratios and the
overhead of one call to a registered sync callable. The ``+labels`` and ``+strict``
columns are the cost of provenance tracking (``tracking="on"`` / ``"strict"``) against
the same interpreter without it, measured in the same turns. With the ``bench`` extra installed
(``pip install -e ".[bench]"``) pydantic-monty (a worker session fed each script) and
smolagents' LocalPythonExecutor are measured side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

from dcbrain.tfplan import Interpreter, Limits

SCRIPTS: dict[str, str] = {
    "loop_sum": """
total = 0
for i in range(200000):
    total += i
total
""",
    "fib_20": """
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
fib(20)
""",
    "sort_20k_dicts": """
rows = [{"id": i, "score": (i * 7919) % 10007, "name": "n" + str(i)} for i in range(20000)]
ranked = sorted(rows, key=lambda r: (r["score"], r["id"]))
ranked[0]["id"]
""",
    "fstrings_20k": """
lines = []
for i in range(20000):
    lines.append(f"item {i}: {i * 2} units at {i / 3:.2f} each")
len(lines)
""",
    "plan_like": """
rows = [{"id": i, "name": f"item{i}", "price": (i * 37) % 101,
         "tags": [t for t in ("red", "big", "new") if (i + len(t)) % 3]} for i in range(4000)]
by_id = {r["id"]: r for r in rows}
cheap = list(filter(lambda r: r["price"] < 50, rows))
best = max(rows, key=lambda r: (r["price"], -r["id"]))
lines = [f"{r['name']}: {r['price']:>4} ({len(r['tags'])} tags)" for r in cheap]
totals = {}
for r in rows:
    for t in r["tags"]:
        totals[t] = totals.get(t, 0) + r["price"]
ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)
names = [r["name"].upper() for r in rows if r["id"] % 7 == 0 and "red" in r["tags"]]
[best["id"], len(lines), ranked[0][0], len(by_id), len(names)]
""",
}

HOST_CALLS = """
for i in range(2000):
    echo(x=i)
"""


def best_of(repeat: int, func: Callable[[], Any]) -> float:
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - started)
    return best


def interleaved_best(repeat: int, runners: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Best time of each runner, the runners taking turns so a busy machine slows all alike."""
    best = dict.fromkeys(runners, math.inf)
    for _ in range(repeat):
        for name, func in runners.items():
            started = time.perf_counter()
            func()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def cpython_runner(source: str) -> Callable[[], Any]:
    code = compile(source, "<bench>", "exec")
    return lambda: exec(code, {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    interpreter = Interpreter(limits=Limits(max_operations=50_000_000))
    tracked = {mode: Interpreter(limits=Limits(max_operations=50_000_000), tracking=mode)
               for mode in ("on", "strict")}
    with contextlib.ExitStack() as stack:
        others = {name: runner for name, runner in (
            ("monty", _monty_runner(stack)), ("smolagents", _smolagents_executor()),
        ) if runner is not None}
        header = (f"{'script':<16}{'cpython ms':>12}{'dcbrain ms':>12}{'ratio':>8}"
                  f"{'+labels':>9}{'+strict':>9}")
        for name in others:
            header += f"{name + ' ms':>15}{'ratio':>8}"
        print(header)
        ratios: dict[str, list[float]] = {"dcbrain": [], **{name: [] for name in others}}
        overheads: dict[str, list[float]] = {mode: [] for mode in tracked}
        for script, source in SCRIPTS.items():
            runners = {"cpython": cpython_runner(source),
                       "dcbrain": lambda source=source: interpreter.run(source),
                       **{f"tracking {mode}": lambda source=source, run=run: run.run(source)
                          for mode, run in tracked.items()},
                       **{name: lambda source=source, run=run: run(source)
                          for name, run in others.items()}}
            best = interleaved_best(args.repeat, runners)
            reference = best["cpython"]
            row = f"{script:<16}{reference * 1e3:>12.2f}"
            for name in ("dcbrain", *others):
                ratios[name].append(best[name] / reference)
                width = 12 if name == "dcbrain" else 15
                row += f"{best[name] * 1e3:>{width}.2f}{best[name] / reference:>8.2f}"
                if name == "dcbrain":
                    for mode in tracked:
                        overhead = best[f"tracking {mode}"] / best["dcbrain"]
                        overheads[mode].append(overhead)
                        row += f"{(overhead - 1) * 100:>8.1f}%"
            print(row)
        for name, values in ratios.items():
            print(f"geometric mean ratio ({name} / CPython): {_geomean(values):.2f}")
        for mode, values in overheads.items():
            print(f"provenance tracking {mode!r}: geometric mean overhead "
                  f"{(_geomean(values) - 1) * 100:.1f}% (tracking off compiles the plan "
                  "without it: no overhead)")
    print(f"host-call overhead per sync call: {_host_call_overhead(args.repeat):.1f} us")


def _host_call_overhead(repeat: int) -> float:
    def echo(x: int) -> int:
        return x

    with_calls = Interpreter({"echo": echo}, limits=Limits(max_calls=10_000))
    baseline = Interpreter({"echo": echo})
    loop_only = HOST_CALLS.replace("echo(x=i)", "i")
    calls = best_of(repeat, lambda: with_calls.run(HOST_CALLS))
    loop = best_of(repeat, lambda: baseline.run(loop_only))
    return (calls - loop) / 2000 * 1e6


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _smolagents_executor() -> Callable[[str], Any] | None:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None

    def run(source: str) -> Any:
        executor = LocalPythonExecutor(additional_authorized_imports=[],
                                       max_print_outputs_length=10**6)
        executor.send_tools({})
        return executor(source)

    return run


def _monty_runner(stack: contextlib.ExitStack) -> Callable[[str], Any] | None:
    """pydantic-monty: one checked-out worker session, fed each script (pool start excluded)."""
    try:
        from pydantic_monty import Monty
    except ImportError:
        return None
    pool = stack.enter_context(Monty())
    session = stack.enter_context(pool.checkout())
    return session.feed_run  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
