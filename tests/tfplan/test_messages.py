"""Error messages say what CPython says, and never name the sandbox's internals."""

from __future__ import annotations

import pytest

from dcbrain.tfplan import Interpreter, TFRuntimeError


def cpython_error(source: str) -> tuple[str, str]:
    try:
        exec(compile(source, "<plan>", "exec"), {"__name__": "__main__"})
    except Exception as exc:
        return type(exc).__name__, str(exc)
    raise AssertionError("CPython ran the source without an error")


def plan_error(source: str) -> TFRuntimeError:
    with pytest.raises(TFRuntimeError) as caught:
        Interpreter().run(source)
    return caught.value


@pytest.mark.parametrize(
    "source",
    [
        "'-'.join()",
        "'-'.join(['a'], 1)",
        "'-'.join(5)",
        "str.join()",
        "repr()",
        "repr(1, 2)",
        "print('x', foo=1)",
        "[*5]",
        "(*None,)",
        "{**5}",
        "def f(**k):\n    pass\nf(**5)",
        "def f(a):\n    pass\nf()",
        "def f(a, /):\n    pass\nf(a=1)",
        "def f():\n    pass\nf(x=1)",
        "def outer():\n    def inner(k):\n        pass\n    inner()\nouter()",
        "g = lambda x: x\ng()",
        "import math\nlen(math)",
        "import math\nmath()",
        "import math\n[*math]",
        "str + 1",
        "{}['Namespace']",
        "int('TypeProxy')",
        "iter(**1)",
        "iter()",
        "sorted()",
        "sorted([1], [2])",
        "list(1, 2)",
        "dict(1, 2, 3)",
        "format()",
        "isinstance(1)",
        "hash()",
        "'a'.replace('a')",
        "'a'.replace('a', 'b', 1, 2)",
        "'a'.center()",
        "divmod(1)",
        "def sorted(x):\n    return x\nsorted()",
        "import math\nmath.isqrt()",
        "import math\nmath.isqrt(4, 2)",
        "import math\nmath.factorial(1, 2)",
        "hex()",
    ],
)
def test_message_is_cpythons(source: str) -> None:
    error = plan_error(source)
    assert (error.kind, error.message) == cpython_error(source)


def test_chains_and_tools_are_functions_in_messages() -> None:
    def search(query: str) -> str:
        return query

    with pytest.raises(TFRuntimeError) as caught:
        Interpreter({"search": search}).run("len(search)")
    assert caught.value.message == "object of type 'function' has no len()"


@pytest.mark.parametrize(
    "source",
    ["sorted()", "sum()", "list(1, 2)", "dict(1, 2, 3)", "json.dumps()", "json.loads()",
     "math.prod()", "format()", "isinstance(1)", "round()", "round(1, 2, 3)", "hash()",
     "str.upper()", "'a'.center()", "'a'.replace('a')", "'{}'.format"],
)
def test_message_never_names_internals(source: str) -> None:
    try:
        Interpreter().run(source)
    except TFRuntimeError as error:
        assert "<locals>" not in error.message
        assert "build_" not in error.message
        assert "plan_" not in error.message
