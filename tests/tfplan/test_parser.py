"""Parsing: the allowlist, rejected constructs with positions, plan extraction."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from dcbrain.tfplan import TFSyntaxError, extract_plan, parse
from dcbrain.tfplan.language import allowed_constructs
from dcbrain.tfplan.parser import MAX_TREE_NODES, REJECTED_NODES, syntax_tree


@pytest.mark.parametrize(
    ("source", "construct", "line", "col"),
    [
        ("import os", "import of 'os'", 1, 1),
        ("x = 1\nfrom os import path", "import from 'os'", 2, 1),
        ("try:\n    x = 1\nexcept Exception:\n    pass", "try statement", 1, 1),
        ("with f() as g:\n    pass", "with statement", 1, 1),
        ("class A:\n    pass", "class definition", 1, 1),
        ("async def f():\n    pass", "async function", 1, 1),
        ("def f():\n    yield 1", "yield expression", 2, 5),
        ("def f():\n    global __x", "name '__x'", 2, 5),
        ("@d\ndef f():\n    pass", "decorator", 2, 1),
        ("x = ().__class__", "attribute '__class__'", 1, 5),
        ("__secret = 1", "name '__secret'", 1, 1),
        ("def f(__a):\n    pass", "parameter '__a'", 1, 7),
        ("from math import *", "'from math import *'", 1, 1),
        ("match x:\n    case 1:\n        pass", "match statement", 1, 1),
        ("x = b'raw'", "bytes literal", 1, 5),
    ],
)
def test_rejected_constructs_name_the_construct_and_position(
    source: str, construct: str, line: int, col: int
) -> None:
    with pytest.raises(TFSyntaxError) as caught:
        parse(source)
    problem = caught.value.problems[0]
    assert construct in problem.message
    assert "not allowed in tf_plan" in problem.message
    assert (problem.line, problem.col) == (line, col)


def test_every_problem_is_reported_at_once() -> None:
    source = "import os\nx = 1\nclass A:\n    pass\ny = x._hidden\n"
    with pytest.raises(TFSyntaxError) as caught:
        parse(source)
    assert [p.line for p in caught.value.problems] == [1, 3, 5]


def test_syntax_error_has_line_and_column_and_caret() -> None:
    with pytest.raises(TFSyntaxError) as caught:
        parse("x = 1\ny = (2 +\n")
    error = caught.value
    assert error.line == 2
    assert error.kind == "SyntaxError"
    assert str(error).startswith("2:")


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    with pytest.raises(TFSyntaxError):
        parse("x = " + "[" * 1000 + "]" * 1000)
    with pytest.raises(TFSyntaxError):
        parse("x = " + " + ".join(["1"] * 20000))


def test_special_function_name_is_allowed() -> None:
    plan = parse("c = __construct_chain(output_schema={}, tags=['a'])\nc(text='x')")
    assert plan.tree.body


def test_extract_plan_prefers_tf_plan_and_tolerates_a_missing_fence() -> None:
    reply = "Thinking...\n```python\nprint(1)\n```\n```tf_plan\nx = 2\nreturn x\n```\n"
    assert extract_plan(reply) == "x = 2\nreturn x"
    assert extract_plan("Plan:\n```tf_plan\nprint('unterminated')\n") == "print('unterminated')"
    assert extract_plan("```python\nprint(3)\n```") == "print(3)"
    assert extract_plan("The answer is 42.") is None


def test_docs_list_every_allowed_and_rejected_construct() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "tfplan.md").read_text(encoding="utf-8")
    table = docs.split("## What a plan may contain")[1].split("## Values")[0]
    documented = set(re.findall(r"^\| ([a-z][^|]*?) \|", table, flags=re.M)) - {"construct"}
    statements, expressions = allowed_constructs()
    assert set(statements) | set(expressions) <= documented
    flowing = " ".join(docs.split())
    for construct in set(REJECTED_NODES.values()):
        assert construct in flowing, construct


def test_a_plan_with_too_many_syntax_nodes_is_refused_naming_the_limit() -> None:
    source = "\n".join(f"x{i} = [1, 2, 3, 4, 5, 6, 7, 8]" for i in range(2000))
    with pytest.raises(TFSyntaxError) as caught:
        parse(source)
    (problem,) = caught.value.problems
    assert problem.message == f"plan is too large: more than the limit of {MAX_TREE_NODES} " \
                              "syntax nodes"
    assert caught.value.tree is None  # nothing more is checked of it


def test_many_rejected_constructs_report_the_first_twenty() -> None:
    source = "\n".join(f"class C{i}:\n    pass" for i in range(500))
    with pytest.raises(TFSyntaxError) as caught:
        parse(source)
    problems = caught.value.problems
    assert [p.line for p in problems[:20]] == list(range(1, 40, 2))
    assert str(problems[20]) == "41:1: ... and 480 more problems"


def test_a_parse_spoiled_by_another_threads_parse_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CPython before 3.13 counts syntax tree nesting in one counter for all threads; a
    # library parsing in another thread at the same moment makes the parse fail spuriously
    real_parse = ast.parse
    spoiled = iter([True, False])

    def racing_parse(*args: Any, **kwargs: Any) -> ast.Module:
        if next(spoiled, False):
            raise SystemError("AST constructor recursion depth mismatch (before=129, after=183)")
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", racing_parse)
    assert isinstance(syntax_tree("x = 1").body[0], ast.Assign)
    monkeypatch.setattr(ast, "parse", lambda *a, **k: (_ for _ in ()).throw(
        SystemError("some other interpreter error")))
    with pytest.raises(SystemError, match="some other"):
        syntax_tree("x = 1")
