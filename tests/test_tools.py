"""Tools: Python functions and schema-described callables, as plans and planners see them."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from dcbrain import TFChainInterpreter
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



@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_the_plan_interpreter_retries_a_tool_with_retries(isolation: str) -> None:
    failures = {"sync": 2, "async": 2}

    def flaky(n: int) -> int:
        if failures["sync"]:
            failures["sync"] -= 1
            raise ConnectionError("reset by peer")
        return n

    async def aflaky(n: int) -> int:
        if failures["async"]:
            failures["async"] -= 1
            raise ConnectionError("reset by peer")
        return n

    def never(n: int) -> int:
        raise ConnectionError("down")

    interpreter = Interpreter(tools=[Tool(flaky, retries=2, backoff=0),
                                     Tool(aflaky, retries=2, backoff=0),
                                     Tool(never, retries=1, backoff=0)], isolation=isolation)
    assert interpreter.run("return [flaky(n=1), aflaky(n=2)]").value == [1, 2]
    assert failures == {"sync": 0, "async": 0}
    with pytest.raises(TFInterpreterError, match=r"failed 2 tries"):
        interpreter.run("return never(n=1)")


def refund_google(order_id: str, amount: float, reason: str = "") -> str:
    """Refund an order.

    Only orders that were paid can be refunded.

    Args:
        order_id: The order's id, e.g. "A-1001".
        amount: How much to refund,
            in the order's currency.
        reason: Why, in the customer's words.

    Returns:
        The refund's id.
    """
    return order_id


def refund_numpy(order_id: str, amount: float) -> str:
    """Refund an order.

    Parameters
    ----------
    order_id : str
        The order's id, e.g. "A-1001".
    amount
        How much to refund.
    """
    return order_id


def refund_sphinx(order_id: str, amount: float) -> str:
    """Refund an order.

    :param order_id: The order's id, e.g. "A-1001".
    :param amount: How much to refund.
    :returns: The refund's id.
    """
    return order_id


@pytest.mark.parametrize("func", [refund_google, refund_numpy, refund_sphinx])
def test_docstring_parameter_sections_describe_the_parameters(func: Any) -> None:
    refund = Tool(func)
    properties = refund.parameters_schema["properties"]
    assert properties["order_id"]["description"] == 'The order\'s id, e.g. "A-1001".'
    assert properties["amount"]["description"].startswith("How much to refund")
    assert refund.description == "Refund an order."
    assert "order_id" not in refund.description


def test_what_the_planner_sees_has_the_parameter_descriptions() -> None:
    [described] = TFChainInterpreter({}, tools=[Tool(refund_google)]).describe_callables()
    assert described["description"] == "Refund an order."
    schema = described["input_schema"]["properties"]
    assert schema["amount"]["description"] == "How much to refund,\nin the order's currency."
    assert schema["reason"] == {"type": "string", "default": "",
                                "description": "Why, in the customer's words."}


def test_an_annotated_description_wins_and_prose_without_sections_stays_whole() -> None:
    def lookup(order_id: Annotated[str, Field(description="The id.")], full: bool) -> str:
        """Look an order up.
        Args:
            order_id: Ignored: the annotation says it.
            full: Every field.
        """
        return order_id

    properties = Tool(lookup).parameters_schema["properties"]
    assert properties["order_id"]["description"] == "The id."
    assert properties["full"]["description"] == "Every field."
    assert Tool(lookup).description == "Look an order up."

    def plain(text: str) -> str:
        """Shout ``text``.

        Said loudly."""
        return text.upper()

    assert Tool(plain).description == "Shout ``text``."
    assert "description" not in Tool(plain).parameters_schema["properties"]["text"]
