"""Compiling plans: time linear in their size, and never on the caller's event loop."""

from __future__ import annotations

import time

import pytest

from dcbrain.tfplan import Interpreter, TFSyntaxError, compile_source
from support.event_loop import SLOW_TO_COMPILE, ticks_while


def nested(level: str, depth: int = 95) -> str:
    """``level`` applied ``depth`` times to ``a`` (``level`` has one ``{}``)."""
    expression = "a"
    for _ in range(depth):
        expression = level.format(expression)
    return expression


def test_deeply_nested_expressions_compile_in_time_linear_in_their_size() -> None:
    # each level is wrapped in an inline check; positioning the wrapper once walked
    # everything under it, which made a nested expression quadratic
    levels = ["({} * 3)", "({} % 3)", "d[{}]"]
    source = "\n".join(f"x{i} = {nested(levels[i % 3])}" for i in range(60))
    started = time.monotonic()
    compile_source(source)
    assert time.monotonic() - started < 10.0  # took 25 s


def test_an_error_deep_in_a_nested_expression_points_at_its_position() -> None:
    source = "a = 1\nx = " + nested("({} * 3)", 40).replace("a", "b", 1)
    with pytest.raises(Exception) as caught:
        Interpreter(isolation="inprocess").run(source)
    assert str(caught.value).startswith("2:")
    assert "'b' is not defined" in str(caught.value)


async def test_arun_compiles_the_plan_in_a_worker_thread_while_the_loop_serves() -> None:
    ticks, error = await ticks_while(Interpreter(isolation="inprocess").arun(SLOW_TO_COMPILE))
    assert isinstance(error, TFSyntaxError)
    assert error.problems[0].message == "'break' outside loop"
    assert ticks > 1  # 0 when the compile blocked the loop
