"""Names and scopes resolve as in a Python module; imports of math and json are no-ops."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.tfplan import (
    CallDepthLimitExceeded,
    Interpreter,
    Limits,
    OperationLimitExceeded,
    SizeLimitExceeded,
    TFCheckError,
    TFRuntimeError,
    TFSyntaxError,
    check,
)


def run(source: str, **callables: Any) -> Any:
    return Interpreter(callables).run(source, check=True).value


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("n = 0\nfor _ in range(3):\n    n += 1\nn", 3),
        ("pair = (1, 2)\na, _ = pair\na", 1),
        ("_total = 5\ndef _double(_x):\n    return _x * 2\n_double(_total)", 10),
        ("f = lambda _: 7\nf(None)", 7),
    ],
)
def test_single_underscore_names_are_ordinary(source: str, value: Any) -> None:
    assert run(source) == value


@pytest.mark.parametrize("source", ["__x = 1", "def f(__a):\n    pass", "f(__k=1)",
                                    "def __f():\n    pass"])
def test_dunder_names_stay_reserved(source: str) -> None:
    with pytest.raises(TFSyntaxError, match="names starting with '__' are reserved"):
        Interpreter().run(source)


def test_assigning_a_builtins_name_later_leaves_earlier_uses_alone() -> None:
    assert run("xs = [1, 2, 3]\ntotal = sum(xs)\nsum = 10\ntotal + sum") == 16


def test_del_of_a_shadowing_name_uncovers_the_builtin() -> None:
    assert run("len = 3\ndel len\nlen('abcd')") == 4


def test_a_registered_callable_shadowed_later_is_still_callable_before() -> None:
    def search(query: str) -> str:
        return f"found {query}"

    assert run("first = search(query='a')\nsearch = 'gone'\n[first, search]",
               search=search) == ["found a", "gone"]


@pytest.mark.parametrize("name", ["dict", "print", "json", "ValueError"])
def test_a_callable_never_replaces_a_builtin(name: str) -> None:
    def impostor(**kwargs: Any) -> str:
        return "hijacked"

    with pytest.raises(ValueError, match=f"callable '{name}' clashes with the tf_plan "
                                         f"builtin {name}"):
        Interpreter({name: impostor})
    impostor.__name__ = name
    with pytest.raises(ValueError, match="clashes with the tf_plan builtin"):
        Interpreter(tools=[impostor])


def test_a_name_bound_only_inside_a_function_is_not_visible_at_top_level() -> None:
    problems = check("def f():\n    hidden = 1\n    return hidden\nf()\nprint(hidden)")
    assert [(p.line, p.col) for p in problems] == [(5, 7)]
    assert "name 'hidden' is never assigned" in problems[0].message


def test_functions_see_enclosing_and_module_names() -> None:
    source = ("rate = 2\ndef outer(x):\n    scale = 3\n    def inner(y):\n"
              "        return y * scale * rate\n    return inner(x)\nouter(5)")
    assert check(source) == []
    assert run(source) == 30


def test_global_and_nonlocal_work_inside_plan_functions() -> None:
    source = ("count = 0\ndef bump():\n    global count\n    count += 1\n"
              "def counter():\n    n = 0\n    def step():\n        nonlocal n\n"
              "        n += 1\n        return n\n    step()\n    return step()\n"
              "bump()\nbump()\n[count, counter()]")
    assert run(source) == [2, 2]


def test_a_global_declared_in_a_function_binds_a_top_level_name() -> None:
    assert run("def setup():\n    global ready\n    ready = True\nsetup()\nready") is True


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("nonlocal x", "nonlocal declaration not allowed at module level", 1),
        ("x = 1\ndef f():\n    nonlocal x\n    x = 2", "no binding for nonlocal 'x' found", 3),
    ],
)
def test_nonlocal_without_an_enclosing_binding_is_a_syntax_error(
    source: str, message: str, line: int
) -> None:
    with pytest.raises(TFSyntaxError) as caught:
        Interpreter().run(source)
    assert message in str(caught.value)
    assert caught.value.line == line


def test_walrus_in_a_comprehension_binds_the_enclosing_scope() -> None:
    assert run("[last := i for i in range(3)]\nlast") == 2


def test_reading_a_top_level_name_before_assigning_it_is_a_name_error() -> None:
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter().run("print(z)\nz = 1")
    assert (caught.value.kind, caught.value.message) == ("NameError", "name 'z' is not defined")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(a):\n    return a\nf()", "f() missing 1 required positional argument: 'a'"),
        ("def f():\n    pass\nf(1)", "f() takes 0 positional arguments but 1 was given"),
        ("def outer():\n    def inner(*, k):\n        pass\n    inner()\nouter()",
         "outer.<locals>.inner() missing 1 required keyword-only argument: 'k'"),
    ],
)
def test_plan_function_errors_name_functions_as_python_does(source: str, message: str) -> None:
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter().run(source)
    assert caught.value.message == message


def test_plan_functions_repr_without_internal_names() -> None:
    assert run("def f():\n    pass\nrepr(f)").startswith("<function f at ")


def test_call_depth_limit_points_at_the_recursive_call() -> None:
    source = "def down(n):\n    return 1 + down(n + 1)\ndown(0)"
    with pytest.raises(CallDepthLimitExceeded) as caught:
        Interpreter(limits=Limits(max_call_depth=20)).run(source)
    assert (caught.value.line, caught.value.col) == (2, 16)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("import math\nmath.sqrt(16)", 4.0),
        ("import json\njson.dumps([1])", "[1]"),
        ("import math as m, json as j\nj.loads(j.dumps(m.floor(2.5)))", 2),
        ("from math import sqrt, pi as PI\nround(sqrt(PI * PI), 5)", 3.14159),
        ("from json import dumps\ndumps({'a': 1})", '{"a": 1}'),
        ("def f():\n    from math import gcd\n    return gcd(12, 18)\nf()", 6),
        ("math = 1\nfrom math import floor\nfloor(2.7)", 2),
        ("json = 5\nimport json\njson.dumps(1)", "1"),
        ("def f():\n    import math\n    return math.floor(1.5)\nf()", 1),
    ],
)
def test_imports_of_math_and_json_bind_what_python_would(source: str, value: Any) -> None:
    assert run(source) == value


@pytest.mark.parametrize(
    ("source", "message", "line", "col"),
    [
        ("x = 1\nimport os", "import of 'os' is not allowed in tf_plan", 2, 1),
        ("import math.pi", "import of 'math.pi' is not allowed", 1, 1),
        ("from os.path import join", "import from 'os.path' is not allowed", 1, 1),
        ("from . import x", "import from '.' is not allowed", 1, 1),
        ("from math import nope", "cannot import name 'nope' from 'math'", 1, 1),
        ("from math import *", "'from math import *' is not allowed", 1, 1),
    ],
)
def test_other_imports_are_errors_with_positions(
    source: str, message: str, line: int, col: int
) -> None:
    with pytest.raises(TFSyntaxError) as caught:
        Interpreter().run(source)
    problem = caught.value.problems[0]
    assert message in problem.message
    assert (problem.line, problem.col) == (line, col)


def test_an_iterator_is_its_own_iterator() -> None:
    assert run("it = iter([1, 2, 3])\nsame = iter(it)\n[same is it, next(it), list(same)]") == \
        [True, 1, [2, 3]]


def test_iter_next_and_hash_are_builtins() -> None:
    source = ("it = iter([1, 2])\nfirst = next(it)\nsecond = next(it)\n"
              "[first, second, next(it, 'done'), hash((1, 'a')) == hash((1, 'a'))]")
    assert run(source) == [1, 2, "done", True]


def test_hash_refuses_a_value_that_expands_past_the_size_limit() -> None:
    source = "a = ()\nfor _ in range(40):\n    a = (a, a)\nhash(a)"
    with pytest.raises(SizeLimitExceeded):
        Interpreter(limits=Limits(max_size=1000)).run(source)


def test_dict_fromkeys_passes_the_check_and_runs() -> None:
    assert run("dict.fromkeys(['a', 'b'], 0)") == {"a": 0, "b": 0}


def test_unknown_names_in_a_large_plan_get_hints_only_for_the_first_few() -> None:
    source = "total = 1\n" + "\n".join(f"print(totals{i})" for i in range(200))
    with pytest.raises(TFCheckError) as caught:
        Interpreter().run(source, check=True)
    problems = caught.value.problems
    assert len(problems) == 21
    assert problems[-1].message == "... and 180 more problems"
    hints = [p.message for p in caught.value.problems if "did you mean 'total'" in p.message]
    assert 0 < len(hints) <= 20


def test_a_callable_rebound_from_its_own_result_is_called_first() -> None:
    def search(query: str) -> str:
        return f"found {query}"

    assert run("search = search(query='a')\nsearch", search=search) == "found a"


def test_a_deleted_top_level_name_is_a_name_error() -> None:
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter().run("x = 1\ndel x\nx + 1")
    assert (caught.value.kind, caught.value.message) == ("NameError", "name 'x' is not defined")


def test_functions_and_comprehensions_see_top_level_names_bound_after_their_definition() -> None:
    source = ("def total():\n    return sum(price * qty for price in prices)\n"
              "qty = 2\nprices = [1, 2]\nlater = [p * qty for p in prices]\n[total(), later]")
    assert run(source) == [6, [2, 4]]


@pytest.mark.parametrize("source", ["5 in iter(int, 1)", "-1 in iter(range(10**18))",
                                    "list(iter(int, 1))"])
def test_iter_pays_for_every_item(source: str) -> None:
    with pytest.raises(OperationLimitExceeded):
        Interpreter(limits=Limits(max_operations=10_000)).run(source)


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("x = 1\nbreak", "'break' outside loop", 2),
        ("x = 1\ndef f():\n    nonlocal x", "no binding for nonlocal 'x' found", 3),
        ("def f(a, a):\n    pass", "duplicate argument 'a' in function definition", 1),
    ],
)
def test_check_reports_what_pythons_compiler_refuses(source: str, message: str, line: int) -> None:
    problems = Interpreter().check(source)
    assert [(p.line, p.message) for p in problems] == [(line, message)]


def test_two_callables_of_one_name_are_refused_naming_both_definitions() -> None:
    def lookup(order_id: str) -> str:
        return "orders"

    def crm_lookup(name: str) -> str:
        return "crm"

    crm_lookup.__name__ = "lookup"
    first_line = lookup.__code__.co_firstlineno
    for callables, tools in (({"lookup": lookup}, [crm_lookup]), ({}, [lookup, crm_lookup])):
        with pytest.raises(ValueError) as caught:
            Interpreter(callables, tools=tools)
        assert str(caught.value) == (
            "two callables are named 'lookup': tool 'lookup' (function "
            "test_two_callables_of_one_name_are_refused_naming_both_definitions.<locals>.lookup"
            f" in tests/tfplan/test_names.py:{first_line}) and tool 'lookup' (function "
            "test_two_callables_of_one_name_are_refused_naming_both_definitions.<locals>."
            f"crm_lookup in tests/tfplan/test_names.py:{first_line + 3}); rename one of them")
