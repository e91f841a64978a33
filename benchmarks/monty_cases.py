"""tf_plan against CPython on pydantic-monty's test-case corpus (a suite written elsewhere).

    python benchmarks/monty_cases.py PATH/TO/monty/crates/monty/test_cases [--verbose]

The cases are not vendored: point the script at a checkout of pydantic/monty. Every case
that tf_plan's parser accepts ("inside the language") runs under CPython (``exec``) and
under tf_plan; a case matches when both print the same output and end the same way (the
same value of the last expression, or the same exception kind and message). A difference
is "earlier" when tf_plan's static check or one of its limits answered first (by design),
"boundary" when the plan's value contains itself (a result must be plain data to leave
the sandbox, by design), otherwise it is a mismatch. Cases that need monty's host hooks
(external calls, a mounted file system, async) or are expected to fail under CPython are
skipped.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcbrain.tfplan import (
    Interpreter,
    Limits,
    TFCheckError,
    TFInterpreterError,
    TFLimitError,
    TFSyntaxError,
    parse,
)

_SKIP_MARKERS = ("call-external", "mount-fs", "xfail=cpython", "xfail=monty,cpython")
_RESULT = "__case_result"


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its output, and either a value's repr or an error."""

    stdout: str
    value: str | None
    error: tuple[str, str] | None

    def describe(self) -> str:
        if self.error is not None:
            return f"{self.error[0]}: {self.error[1]}"[:200]
        return f"value {self.value}"[:200]


def _directives(source: str) -> list[str]:
    lines = []
    for line in source.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    return lines


def _skipped(source: str) -> bool:
    directives = _directives(source)
    if any(d.startswith(marker) for d in directives for marker in _SKIP_MARKERS):
        return True
    return "await " in source or "async def" in source


def run_cpython(source: str) -> Outcome:
    """``source`` under CPython, keeping the value of the last top-level expression
    statement executed, which is what a tf_plan run returns."""
    tree = ast.parse(source)
    tree.body = [
        ast.copy_location(ast.Assign(targets=[ast.Name(id=_RESULT, ctx=ast.Store())],
                                     value=statement.value), statement)
        if isinstance(statement, ast.Expr) else statement
        for statement in tree.body
    ]
    ast.fix_missing_locations(tree)
    namespace: dict[str, Any] = {"__name__": "__main__", _RESULT: None}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<case>", "exec"), namespace)
    except SyntaxError as exc:  # raised by compile: tf_plan reports CPython's message
        return Outcome(out.getvalue(), None, ("SyntaxError", exc.msg))
    except Exception as exc:  # the case's own outcome
        return Outcome(out.getvalue(), None, (type(exc).__name__, str(exc)))
    return Outcome(out.getvalue(), repr(namespace[_RESULT]), None)


def run_tf_plan(source: str, interpreter: Interpreter) -> tuple[Outcome, TFInterpreterError | None]:
    try:
        result = interpreter.run(source, check=True)
    except TFInterpreterError as exc:
        return Outcome(exc.stdout, None, (exc.kind, exc.message)), exc
    return Outcome(result.stdout, repr(result.value), None), None


def _difference(expected: Outcome, actual: Outcome, error: TFInterpreterError | None) -> str:
    if isinstance(error, TFCheckError | TFLimitError):
        return "earlier"
    self_containing = expected.value is not None and "..." in expected.value
    if self_containing and actual.value in ("'<list>'", "'<dict>'", "'<tuple>'"):
        return "boundary"
    return "mismatch"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, help="monty's crates/monty/test_cases directory")
    parser.add_argument("--verbose", action="store_true", help="list every difference")
    args = parser.parse_args()
    files = sorted(args.cases.glob("*.py"))
    if not files:
        sys.exit(f"no .py cases under {args.cases}")
    interpreter = Interpreter(limits=Limits(timeout_s=20))
    counts = {"skipped": 0, "outside": 0, "match": 0, "earlier": 0, "boundary": 0,
              "mismatch": 0}
    reasons: dict[str, int] = {}
    report: list[str] = []
    for path in files:
        source = path.read_text()
        if _skipped(source):
            counts["skipped"] += 1
            continue
        try:
            parse(source)
        except TFSyntaxError as exc:
            counts["outside"] += 1
            reason = exc.problems[0].message.split(" (")[0]
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        expected = run_cpython(source)
        actual, error = run_tf_plan(source, interpreter)
        if actual == expected:
            counts["match"] += 1
            continue
        kind = _difference(expected, actual, error)
        counts[kind] += 1
        if args.verbose or kind == "mismatch":
            label = "MISMATCH" if kind == "mismatch" else kind
            report.append(f"{label} {path.name}\n    CPython: {expected.describe()}\n"
                          f"    tf_plan: {actual.describe()}"
                          + ("\n    (output differs)" if actual.stdout != expected.stdout else ""))
    inside = sum(counts[kind] for kind in ("match", "earlier", "boundary", "mismatch"))
    print("\n".join(report))
    print(f"\n{len(files)} cases: {counts['skipped']} need monty's host hooks, "
          f"{counts['outside']} outside tf_plan, {inside} inside")
    print(f"inside: {counts['match']} match CPython, {counts['earlier']} answered earlier by "
          f"the checker or a limit, {counts['boundary']} return a value that contains "
          f"itself (not plain data), {counts['mismatch']} mismatch")
    if args.verbose:
        print("\noutside, by first problem:")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            print(f"  {count:4d}  {reason}")


if __name__ == "__main__":
    main()
