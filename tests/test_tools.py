"""Tools: Python functions and schema-described callables, as plans and planners see them."""

from __future__ import annotations

import pytest

from dcbrain.tfplan import Interpreter, TFInterpreterError
from dcbrain.tools import Tool


def test_the_plan_interpreter_calls_python_tools_directly() -> None:
    def double(n: int) -> int:
        """Twice ``n``."""
        return 2 * n

    async def later(text: str) -> str:
        return text.upper()

    interpreter = Interpreter(tools=[Tool(double), Tool(later)])
    assert interpreter.run("return [double(4), double(n='5'), later(text='x')]",
                           check=True).value == [8, 10, "X"]
    with pytest.raises(TFInterpreterError, match="Input should be a valid integer"):
        interpreter.run("return double(n='many')")
