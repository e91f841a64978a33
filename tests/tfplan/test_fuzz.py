"""Fuzzing the tf_plan front end and interpreter: whatever the input, the only way a plan
fails is a ``TFInterpreterError`` (a ``TFSyntaxError`` from ``parse``), and it never hangs.

Three sources of input: programs generated from a small grammar of the language (with
disallowed methods and builtins mixed in), random text and token soup, and mutations of
valid programs.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcbrain.tfplan import Interpreter, Limits, TFInterpreterError, parse
from dcbrain.tfplan.errors import TFSyntaxError

# Generated programs are full of `1[0]`-style nonsense that CPython's compiler warns about.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

FUZZ_LIMITS = Limits(
    max_operations=5_000,
    max_call_depth=30,
    timeout_s=0.5,
    max_size=10_000,
    max_output_chars=2_000,
    max_calls=5,
)
#: A single run may not take longer than this, whatever the limits say (guards hangs).
MAX_RUN_S = 5.0
FUZZ_SETTINGS = settings(
    max_examples=250,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def search(query: str) -> dict[str, Any]:
    return {"query": str(query)[:50], "hits": [1, 2]}


def run_plan(source: str) -> None:
    """Run ``source``; fail on anything but success or a ``TFInterpreterError``."""
    interpreter = Interpreter(callables={"search": search}, limits=FUZZ_LIMITS)
    started = time.monotonic()
    try:
        interpreter.run(source)
    except TFInterpreterError as exc:
        assert isinstance(exc.line, int) and isinstance(exc.col, int)
        assert str(exc)
    except BaseException as exc:
        raise AssertionError(
            f"plain {type(exc).__name__} escaped for plan:\n{source}\n--> {exc!r}"
        ) from exc
    elapsed = time.monotonic() - started
    assert elapsed < MAX_RUN_S, f"plan took {elapsed:.1f}s:\n{source}"


def parse_only(source: str) -> None:
    """``parse`` accepts ``source`` or raises ``TFSyntaxError`` with located problems."""
    try:
        parse(source)
    except TFSyntaxError as exc:
        assert exc.problems
        last_line = len(re.split(r"\r\n|\r|\n", source)) + 1
        for problem in exc.problems:
            assert 0 <= problem.line <= last_line, (problem, source)
            assert problem.message
    except BaseException as exc:
        raise AssertionError(
            f"parse raised plain {type(exc).__name__} for {source!r}: {exc!r}"
        ) from exc


# --- (a) programs from a small grammar of the subset -------------------------------------

VARIABLES = ["a", "b", "c", "xs", "d"]
PREAMBLE = (
    "a = 1\n"
    "b = 'ab'\n"
    "c = [1, 2, 3]\n"
    "xs = ['x', 'y']\n"
    "d = {'k': 1, 'j': [2]}\n"
    "def fn(p, q=1):\n"
    "    return p\n"
)
ALLOWED_METHODS = [
    "append", "extend", "pop", "insert", "remove", "index", "count", "sort", "reverse",
    "copy", "upper", "lower", "strip", "split", "join", "replace", "startswith", "find",
    "format", "zfill", "ljust", "center", "get", "keys", "values", "items", "update",
    "setdefault", "add", "union",
]
DISALLOWED_METHODS = [
    "__class__", "__globals__", "__dict__", "__subclasses__", "__init__", "_private",
    "gi_frame", "f_back", "f_globals", "format_map", "mro", "func", "cell_contents",
    "with_traceback", "__reduce_ex__",
]
ALLOWED_BUILTINS = [
    "len", "range", "enumerate", "zip", "min", "max", "sum", "abs", "round", "sorted",
    "reversed", "any", "all", "str", "int", "float", "bool", "list", "dict", "set", "tuple",
    "isinstance", "map", "filter", "repr", "divmod", "chr", "ord", "pow", "print", "fn",
]
DISALLOWED_BUILTINS = [
    "getattr", "eval", "exec", "type", "open", "vars", "globals", "dir", "__import__",
    "compile", "object", "breakpoint", "id", "iter", "next", "format",
]
BINARY_OPERATORS = [
    "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">=",
    "in", "not in", "is", "and", "or",
]

small_ints = st.integers(-3, 12).map(str)
literals = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["10 ** 10", "9 ** 9", "2 ** 64", "0", "-1", "1.5", "1e308"]),
    st.text(alphabet="ab {}%:>0.[]", max_size=6).map(repr),
    st.sampled_from(["None", "True", "False", "[]", "{}", "()", "set()"]),
    st.sampled_from(VARIABLES),
)


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    def call(name: str, args: list[str]) -> str:
        return f"{name}({', '.join(args)})"

    return st.one_of(
        st.builds(lambda x, op, y: f"({x} {op} {y})", children,
                  st.sampled_from(BINARY_OPERATORS), children),
        st.builds(lambda op, x: f"({op}{x})", st.sampled_from(["-", "not ", "~"]), children),
        st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(children, children), max_size=3).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.builds(lambda x, i: f"({x})[{i}]", children, children),
        st.builds(lambda x, i, j: f"({x})[{i}:{j}]", children, small_ints, small_ints),
        st.builds(lambda x, m, args: f"({x}).{m}({', '.join(args)})", children,
                  st.sampled_from(ALLOWED_METHODS + DISALLOWED_METHODS),
                  st.lists(children, max_size=2)),
        st.builds(call, st.sampled_from(ALLOWED_BUILTINS + DISALLOWED_BUILTINS),
                  st.lists(children, max_size=3)),
        st.builds(lambda x: f"search(query={x})", children),
        st.builds(lambda x, n: f"[{x} for i in range({n})]", children, small_ints),
        st.builds(lambda x, n: f"sum(1 for i in range({n}) if {x})", children, small_ints),
        st.builds(lambda x: f"(lambda p=0: {x})()", children),
        st.builds(lambda x, y, z: f"({x} if {y} else {z})", children, children, children),
        st.builds(lambda x: f"(w := {x})", children),
        st.builds(lambda x: f"f'{{ {x} }}'", children.filter(lambda s: "'" not in s)),
        st.builds(lambda x, spec: f"'{{:{spec}}}'.format({x})", children,
                  st.sampled_from([">5", "<3", "^10", "x", ",", ".2f", ">100000000", "0{}"])),
    )


expressions = st.recursive(literals, _compound, max_leaves=10)


#: One-line statements by kind, as format strings.
SIMPLE_STATEMENTS = {
    "assign": "{name} = {expr}", "augassign": "{name} {op} {expr}",
    "setitem": "{name}[{key}] = {expr}", "expr": "{expr}", "print": "print({expr})",
    "del": "del {name}", "assert": "assert {expr}, 'failed'",
    "break": "{kind}", "continue": "{kind}",
}


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0, in_loop: bool = False) -> list[str]:
    """A list of source lines (already indented relative to the block)."""
    lines: list[str] = []
    kinds = ["assign", "augassign", "setitem", "expr", "print", "del", "assert"]
    if depth < 2:
        kinds += ["if", "for", "while", "def"]
    if in_loop:
        kinds += ["break", "continue"]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        name = draw(st.sampled_from(VARIABLES))
        expr = draw(expressions)
        if kind in SIMPLE_STATEMENTS:
            lines.append(SIMPLE_STATEMENTS[kind].format(
                name=name, expr=expr, kind=kind,
                op=draw(st.sampled_from(["+=", "*=", "-=", "|="])) if kind == "augassign" else "",
                key=draw(expressions) if kind == "setitem" else ""))
        elif kind == "if":
            lines.append(f"if {expr}:")
            lines += _indent(draw(blocks(depth + 1, in_loop)))
            lines.append("else:")
            lines += _indent(draw(blocks(depth + 1, in_loop)))
        elif kind == "for":
            lines.append(f"for i in range({draw(small_ints)}):")
            lines += _indent(draw(blocks(depth + 1, True)))
        elif kind == "while":
            counter = f"n{depth}"
            lines.append(f"{counter} = 0")
            lines.append(f"while {counter} < {draw(small_ints)}:")
            lines.append(f"    {counter} += 1")
            lines += _indent(draw(blocks(depth + 1, True)))
        elif kind == "def":
            lines.append(f"def g{depth}(p, q=1, *rest, **opts):")
            lines += _indent(draw(blocks(depth + 1, False)))
            lines.append(f"    return {expr}")
            lines.append(f"{name} = g{depth}({draw(expressions)}, q={draw(expressions)})")
    return lines


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


programs = blocks().map(lambda lines: PREAMBLE + "\n".join(lines) + "\n")


@FUZZ_SETTINGS
@given(programs)
def test_generated_programs_fail_only_with_tf_errors(source: str) -> None:
    run_plan(source)


@FUZZ_SETTINGS
@given(expressions)
def test_generated_expressions_fail_only_with_tf_errors(expr: str) -> None:
    run_plan(PREAMBLE + expr)


# --- (b) random text and token soup -------------------------------------------------------

TOKENS = [
    "def", "lambda", "return", "if", "elif", "else", "for", "while", "in", "not", "and",
    "or", "import", "from", "class", "try", "except", "with", "yield", "await", "async",
    "global", "nonlocal", "del", "pass", "break", "continue", "raise", "assert", "is",
    "None", "True", "False", "x", "f", "print", "search", "__class__", "__import__",
    "_", "parallel", "__construct_chain", "(", ")", "[", "]", "{", "}", ":", ",", ".",
    ";", "=", ":=", "+", "-", "*", "**", "/", "//", "%", "@", "<<", ">>", "&", "|", "^",
    "~", "<", ">", "==", "!=", "->", "+=", "...", "'s'", '"t"', "f'{x}'", "b'x'", "'''",
    "0", "1", "10**10", "1.5", "0x1f", "1j", "\\", "#", "\n", "\n    ", "\t", "\x00",
    "\ud800", "\uff3f", "\u212f", "\r", "\x0c",
]
token_soup = st.lists(st.sampled_from(TOKENS), max_size=30).map(
    lambda toks: "".join(t if t.startswith(("\n", "\t", "\r")) else t + " " for t in toks)
)


@settings(FUZZ_SETTINGS, max_examples=500)
@given(st.text(max_size=200))
def test_random_text_parses_or_raises_syntax_error(source: str) -> None:
    parse_only(source)


@settings(FUZZ_SETTINGS, max_examples=500)
@given(token_soup)
def test_token_soup_parses_or_raises_syntax_error(source: str) -> None:
    parse_only(source)


@settings(FUZZ_SETTINGS, max_examples=300)
@given(token_soup)
def test_token_soup_runs_or_raises_tf_errors(source: str) -> None:
    run_plan(source)


# --- (c) mutations of valid programs ------------------------------------------------------

VALID_PROGRAMS = [
    PREAMBLE + "total = 0\nfor i in range(10):\n    total += fn(i)\nprint(total)\ntotal\n",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n"
    "result = [fib(i) for i in range(10)]\nprint(result)\n",
    "words = 'the quick brown fox'.split()\ncounts = {}\nfor w in words:\n"
    "    counts[w[0]] = counts.get(w[0], 0) + 1\nprint(sorted(counts.items()))\n",
    "r = search(query='cats')\nhits = r['hits']\nn = 0\nwhile n < len(hits):\n"
    "    n += 1\nprint('{} hits for {q}'.format(n, q=r['query']))\n",
    "pairs = list(zip(range(5), 'abcde'))\nsquares = {k: v * 2 for k, v in pairs}\n"
    "best = max(squares, key=lambda k: (squares[k], k))\nf'{best}: {squares[best]:>4}'\n",
    "def outer(x):\n    def inner(y):\n        return x + y\n    return inner\n"
    "add = outer(10)\nvalues = [add(i) for i in range(3) if i % 2 == 0]\n"
    "assert values == [10, 12]\nreturn values\n",
    "data = [3, 1, 2]\ndata.sort()\nfirst, *rest = data\ndel data[0]\n"
    "(x := len(rest))\nprint(first, rest, x, data[::-1])\n",
]
_TOKEN = re.compile(r"\w+|[^\w\s]+|\s+")


@st.composite
def mutated_programs(draw: st.DrawFn) -> str:
    source = draw(st.sampled_from(VALID_PROGRAMS))
    for _ in range(draw(st.integers(1, 3))):
        source = draw(st.sampled_from([_delete_line, _duplicate_line, _swap_tokens,
                                       _insert_token]))(draw, source)
    return source


def _delete_line(draw: st.DrawFn, source: str) -> str:
    lines = source.splitlines()
    del lines[draw(st.integers(0, len(lines) - 1))]
    return "\n".join(lines) + "\n"


def _duplicate_line(draw: st.DrawFn, source: str) -> str:
    lines = source.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    lines.insert(draw(st.integers(0, len(lines))), lines[i])
    return "\n".join(lines) + "\n"


def _swap_tokens(draw: st.DrawFn, source: str) -> str:
    tokens = _TOKEN.findall(source)
    i = draw(st.integers(0, len(tokens) - 1))
    j = draw(st.integers(0, len(tokens) - 1))
    tokens[i], tokens[j] = tokens[j], tokens[i]
    return "".join(tokens)


def _insert_token(draw: st.DrawFn, source: str) -> str:
    tokens = _TOKEN.findall(source)
    tokens.insert(draw(st.integers(0, len(tokens))), draw(st.sampled_from(TOKENS)))
    return "".join(tokens)


def test_valid_programs_run() -> None:
    for source in VALID_PROGRAMS:
        Interpreter(callables={"search": search}, limits=FUZZ_LIMITS).run(source)


@settings(FUZZ_SETTINGS, max_examples=400)
@given(mutated_programs())
def test_mutated_programs_parse_or_raise_syntax_error(source: str) -> None:
    parse_only(source)


@settings(FUZZ_SETTINGS, max_examples=400)
@given(mutated_programs())
def test_mutated_programs_fail_only_with_tf_errors(source: str) -> None:
    run_plan(source)
