"""A tool's keyword arguments are what binding them to its signature gives, or its error."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import pytest

from dcbrain.exceptions import TFToolError
from dcbrain.tools import Tool


def plain(a: int, b: int = 2, *, c: str = "x", d: str) -> int:
    """Keywords all."""
    return a


def collects(a: int, **rest: Any) -> int:
    """Collects keywords."""
    return a


def first_by_position(a: int, /, b: int = 1) -> int:
    """Positional-only first."""
    return a


def bound_by_inspect(tool: Tool, kwargs: dict[str, Any]) -> dict[str, Any] | str:
    try:
        bound = tool.signature.bind(**kwargs)
    except TypeError as exc:
        return f"tool {tool.name!r}: {exc}"
    arguments: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = tool.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif kind is inspect.Parameter.POSITIONAL_ONLY:
            return "positional-only"
        else:
            arguments[name] = value
    return arguments


@pytest.mark.parametrize("func", [plain, collects, first_by_position])
def test_keyword_arguments_are_what_binding_gives(func: Any) -> None:
    tool = Tool(func)
    for size in range(4):
        for names in itertools.permutations(["d", "a", "z", "b", "c"], size):
            kwargs = {name: index for index, name in enumerate(names)}
            expected = bound_by_inspect(tool, kwargs)
            try:
                got: dict[str, Any] | str = tool.keyword_arguments((), kwargs)
            except TFToolError as exc:
                got = "positional-only" if "(positional-only)" in str(exc) else str(exc)
            assert got == expected, kwargs
            if isinstance(got, dict):
                assert list(got) == list(expected)  # type: ignore[arg-type]
                tool.validate_arguments(kwargs)
            elif got != "positional-only":
                with pytest.raises(TFToolError, match=str(expected).split(": ", 1)[1]):
                    tool.validate_arguments(kwargs)


def test_a_new_signature_is_read_again() -> None:
    tool = Tool(plain)
    assert tool.keyword_arguments((), {"a": 1, "d": "y"}) == {"a": 1, "d": "y"}
    tool.signature = inspect.signature(collects)
    assert tool.keyword_arguments((), {"a": 1, "q": 2}) == {"a": 1, "q": 2}
