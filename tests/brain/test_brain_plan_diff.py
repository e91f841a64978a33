"""ScriptDiff: the text diff and the call-level change between two tf_plan scripts."""

from __future__ import annotations

import ast
import time

from dcbrain.brain import ScriptDiff
from dcbrain.brain.plan_diff import MAX_PLAN_CALLS, plan_calls


def test_calls_are_listed_in_source_order_with_their_argument_source() -> None:
    source = "a, b = parallel(f(x=1), g(y=k + 1))\nreturn h(z=[a, b])"
    calls = plan_calls(source, callables={"f", "g", "h"})
    assert [(c.name, c.kwargs) for c in calls] == [
        ("f", {"x": "1"}), ("g", {"y": "k + 1"}), ("h", {"z": "[a, b]"})
    ]


def test_removed_added_revised_unchanged() -> None:
    old = "a = f(x=1)\nb = g(y=2)\nc = h(z=3)"
    new = "a = f(x=1)\nb = g(y=5)\nd = k(w=4)"
    diff = ScriptDiff.compute(old, new, callables={"f", "g", "h", "k"})
    assert [c.name for c in diff.unchanged] == ["f"]
    assert [(o.kwargs, n.kwargs) for o, n in diff.revised] == [({"y": "2"}, {"y": "5"})]
    assert [c.name for c in diff.removed] == ["h"] and [c.name for c in diff.added] == ["k"]
    assert diff.unified.startswith("--- plan 1\n+++ plan 2\n")
    assert diff.render().splitlines() == [
        "plan revision 1", "- h(z=3)", "~ g(y=2) -> g(y=5)", "+ k(w=4)"
    ]


def test_identical_plans_have_an_empty_diff() -> None:
    diff = ScriptDiff.compute("return f(x=1)", "return f(x=1)")
    assert diff.is_empty and not (diff.removed or diff.added or diff.revised)


def test_an_unparsable_plan_still_has_a_text_diff() -> None:
    diff = ScriptDiff.compute("return f(x=1)", "return f(x=")
    assert [c.name for c in diff.removed] == ["f"] and not diff.added
    assert "+return f(x=\n" in diff.unified


def test_builtins_are_ignored_when_callables_are_given() -> None:
    diff = ScriptDiff.compute("print(f(x=1))", "print(len(f(x=2)))", callables={"f"})
    assert [(o.kwargs, n.kwargs) for o, n in diff.revised] == [({"x": "1"}, {"x": "2"})]


def test_plans_of_thousands_of_repeated_calls_are_compared_by_their_first_calls() -> None:
    # comparing two sequences of few distinct calls takes time that grows faster than
    # their length: 2,000 calls each took minutes
    old = "\n".join(f"f{i % 2}(x=1)" for i in range(2000))
    new = "\n".join(f"f{i // 2 % 2}(x=1)" for i in range(2000))
    started = time.monotonic()
    diff = ScriptDiff.compute(old, new, callables={"f0", "f1"})
    assert time.monotonic() - started < 10.0
    assert len(diff.unchanged) + len(diff.revised) + len(diff.added) == MAX_PLAN_CALLS
    assert diff.unified.startswith("--- plan 1\n+++ plan 2\n")


def test_argument_source_is_what_ast_unparse_writes() -> None:
    arguments = ['"A-17"', "'it\\'s'", '"a\\nb"', '"\\u00e9"', '"\\x00"', "12", "-3", "True",
                 "None", "order", 'u"x"', "1.5", '"""tri"""', "10**100", '"😀"', 'b"x"',
                 "...", "[1, 'a']", "f'{x!r}'", "d['k']"]
    source = "\n".join(f"step(v={argument}, w={argument})" for argument in arguments)
    calls = plan_calls(source, ["step"])
    expected = [ast.unparse(ast.parse(argument, mode="eval").body) for argument in arguments]
    assert [call.kwargs["v"] for call in calls] == expected
    assert [call.kwargs["w"] for call in calls] == expected
    assert expected[0] == "'A-17'" and expected[10] == "u'x'"


def test_a_revision_with_the_same_calls_lists_every_call_unchanged() -> None:
    old = "a = f(x=1)\nb = g(y=a)\nreturn b"
    new = "a = f(x=1)\nb = g(y=a)\nresult = b\nreturn result"
    diff = ScriptDiff.compute(old, new, callables={"f", "g"})
    assert [(c.name, c.line, c.occurrence) for c in diff.unchanged] == [("f", 1, 1), ("g", 2, 1)]
    assert not (diff.removed or diff.added or diff.revised)
    assert diff.unified and diff.render() == "plan revision 1"
    moved = ScriptDiff.compute(old, "b = g(y=a)\na = f(x=1)\nreturn b", callables={"f", "g"})
    assert moved.removed or moved.added  # another order of the calls is a change
