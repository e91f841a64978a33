"""A tool's argument schema is what the planner and the checker trust: it is never a
silent "anything goes"."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dcbrain.exceptions import TFToolError
from dcbrain.tools import Tool


class Handle:
    """A class pydantic knows nothing about."""


def apply(callback: Callable[[int], int], times: int) -> int:
    return times


def open_handle(handle: Handle) -> str:
    return "open"


@pytest.mark.parametrize(("func", "parameter", "annotation"), [
    (apply, "callback", "Callable[[int], int]"),
    (open_handle, "handle", "Handle"),
])
def test_a_parameter_without_a_json_schema_is_refused_when_the_tool_is_built(
    func: Callable[..., object], parameter: str, annotation: str
) -> None:
    with pytest.raises(TFToolError) as caught:
        Tool(func)
    message = str(caught.value)
    assert f"tool function {func.__name__!r}" in message
    assert f"parameter {parameter!r}" in message
    assert annotation in message


def test_parameters_pydantic_can_describe_keep_their_schema() -> None:
    def lookup(order_id: str, limit: int = 3) -> dict[str, int]:
        return {}

    schema = Tool(lookup).parameters_schema
    assert schema["properties"] == {"order_id": {"type": "string"},
                                    "limit": {"type": "integer", "default": 3}}
    assert schema["required"] == ["order_id"]
