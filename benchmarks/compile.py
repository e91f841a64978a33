"""Checking and compiling large plans against CPython's ``compile`` of the same source.

    python benchmarks/compile.py [--size CHARS] [--repeat N]

Each shape is one construct the rewriter wraps in checks (nested sums, products,
subscripts, calls, f-strings, comparisons …), repeated until the plan is ``--size``
characters (default: just under the parser's source limit). Prints per shape the plan's
syntax nodes, the best-of-N time of CPython's ``compile``, of dcbrain's
:func:`~dcbrain.tfplan.compile_source` and of :func:`~dcbrain.tfplan.check`, their
ratios to CPython, and the peak memory (tracemalloc) of ``compile_source``. A plan over
the parser's node limit is refused before it is checked or rewritten: its row says so,
and a second row measures the largest plan of that shape under the limit.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import itertools
import tracemalloc
from collections.abc import Callable

from interpreter import best_of  # the benchmarks' one timing loop (benchmarks/interpreter.py)

from dcbrain.tfplan import TFSyntaxError, check, compile_source
from dcbrain.tfplan.parser import MAX_SOURCE_CHARS, MAX_TREE_NODES

DEPTH = 90  # under the parser's nesting limit
NESTED_FSTRING = 'f"""{f\'\'\'{f"{f\'{a!r:>{w}} {b}\'} {c}"} {d}\'\'\'} {e}"""'

SHAPES: dict[str, Callable[[int], str]] = {
    "nested_sums": lambda i: f"x{i} = " + "(" * DEPTH + "a" + "".join(
        f" + b{k})" for k in range(DEPTH)),
    "flat_sums": lambda i: f"x{i} = a" + " + b" * 60,
    "nested_products": lambda i: f"x{i} = " + "(" * DEPTH + "a" + " * 3)" * DEPTH,
    "nested_modulo": lambda i: f"x{i} = " + "(" * DEPTH + "a" + " % 3)" * DEPTH,
    "nested_subscripts": lambda i: f"x{i} = " + "d[" * DEPTH + "k" + "]" * DEPTH,
    "method_chains": lambda i: f"x{i} = a" + ".strip()" * 40,
    "nested_fstrings": lambda i: f"x{i} = " + NESTED_FSTRING,
    "compare_chains": lambda i: f"x{i} = a" + " < b" * 60,
    "nested_dicts": lambda i: f"x{i} = " + "{k: " * DEPTH + "1" + "}" * DEPTH,
    "nested_calls": lambda i: f"x{i} = " + "len(" * DEPTH + "a" + ")" * DEPTH,
    "boolean_chains": lambda i: f"x{i} = a" + " and b" * 60,
    "nested_lambdas": lambda i: f"x{i} = " + "lambda: " * 40 + "a",
    "plain_statements": lambda i: f"x{i} = y + {i}",
}


def plan_of(shape: Callable[[int], str], size: int) -> str:
    lines: list[str] = []
    total = 0
    while True:
        line = shape(len(lines))
        if total + len(line) + 1 > size:
            return "\n".join(lines)
        lines.append(line)
        total += len(line) + 1


_FRESH = itertools.count()


def compile_fresh(source: str) -> None:
    """``compile_source`` past its cache: a new set of host names each time."""
    with contextlib.suppress(TFSyntaxError):
        compile_source(source, frozenset({f"tool{next(_FRESH)}"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=MAX_SOURCE_CHARS - 3_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'shape':18} {'chars':>7} {'nodes':>7} {'cpython s':>9} {'compile s':>9} "
          f"{'ratio':>6} {'check s':>8} {'ratio':>6} {'peak MiB':>8}")
    for name, shape in SHAPES.items():
        source = plan_of(shape, args.size)
        nodes = node_count(source)
        if nodes > MAX_TREE_NODES:  # then also the largest plan of this shape accepted
            measure(name, source, nodes, args.repeat)
            source = plan_of(shape, int(len(source) * MAX_TREE_NODES / nodes * 0.98))
            nodes = node_count(source)
        measure(name, source, nodes, args.repeat)


def node_count(source: str) -> int:
    return sum(1 for _ in ast.walk(ast.parse(source)))


def measure(name: str, source: str, nodes: int, repeat: int) -> None:
    reference = best_of(repeat, lambda: compile(source, "<plan>", "exec"))
    ours = best_of(repeat, lambda: compile_fresh(source))
    checked = best_of(repeat, lambda: check(source))
    tracemalloc.start()
    compile_fresh(source)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    refused = "  refused: over the node limit" if nodes > MAX_TREE_NODES else ""
    print(f"{name:18} {len(source):7d} {nodes:7d} {reference:9.3f} {ours:9.3f} "
          f"{ours / reference:6.1f} {checked:8.3f} {checked / reference:6.1f} "
          f"{peak:8.1f}{refused}", flush=True)

if __name__ == "__main__":
    main()
