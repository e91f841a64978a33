"""Differential conformance: each case prints and fails alike under tf_plan and CPython.

Each file in ``conformance/cases`` is a plain Python 3.11 program inside the tf_plan subset.
CPython is the reference: the interpreter must print exactly the same text and, when the
program fails, fail with the same exception kind on the same line after the same output.
"""

from __future__ import annotations

import ast
import contextlib
import io
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from dcbrain.tfplan import Interpreter, TFInterpreterError

CASES_DIR = Path(__file__).parent / "conformance" / "cases"
CASES = sorted(CASES_DIR.glob("*.py"))

# Constructs the corpus must never use: they are outside the language, so a case using
# them would test the parser's rejection rather than the interpreter's semantics.
REJECTED_NODES = (
    ast.Import,
    ast.ImportFrom,
    ast.Try,
    ast.With,
    ast.ClassDef,
    ast.AsyncFunctionDef,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.Global,
    ast.Nonlocal,
)
REJECTED_NAMES = {
    "type",
    "getattr",
    "setattr",
    "eval",
    "exec",
    "open",
    "input",
    "vars",
    "globals",
    "locals",
    "id",
    "hash",
    "iter",
    "next",
    "format",
    "compile",
    "dir",
}


@dataclass(frozen=True)
class Outcome:
    """What a run shows the planner: printed text and, if it failed, where and how."""

    stdout: str
    error_kind: str | None = None
    error_line: int | None = None


def run_cpython(path: Path) -> Outcome:
    """Run a case under CPython in a fresh namespace, as the reference outcome."""
    filename = str(path)
    code = compile(path.read_text(encoding="utf-8"), filename, "exec")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(code, {"__name__": "__plan__"})
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        line = frames[-1].lineno if frames else None
        return Outcome(out.getvalue(), type(exc).__name__, line)
    return Outcome(out.getvalue())


def run_tfplan(path: Path) -> Outcome:
    """Run a case under the tf_plan interpreter with default limits."""
    try:
        result = Interpreter().run(path.read_text(encoding="utf-8"))
    except TFInterpreterError as err:
        return Outcome(err.stdout, err.kind, err.line)
    return Outcome(result.stdout)


def test_corpus_has_at_least_200_cases() -> None:
    assert len(CASES) >= 200


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_stays_inside_the_subset(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, REJECTED_NODES), f"line {node.lineno}: {type(node).__name__}"
        if isinstance(node, ast.FunctionDef):
            assert not node.decorator_list, f"line {node.lineno}: decorator"
        if isinstance(node, ast.Name):
            assert not node.id.startswith("_"), f"line {node.lineno}: name {node.id}"
            assert node.id not in REJECTED_NAMES, f"line {node.lineno}: builtin {node.id}"
        if isinstance(node, ast.Attribute):
            assert not node.attr.startswith("_"), f"line {node.lineno}: attribute {node.attr}"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_matches_cpython(path: Path) -> None:
    assert run_tfplan(path) == run_cpython(path)
