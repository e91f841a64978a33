"""A chain whose model calls Python tools, including a wrong call it then corrects.

Run it as it is (no model, no network): ``python examples/tool_chain.py``.
"""

from __future__ import annotations

from dcbrain import Chain, ScriptedLLM, ToolCall

PRICES = {"apple": 0.5, "pear": 0.75}


def price(fruit: str) -> float:
    """Unit price of a fruit, in euros."""
    return PRICES[fruit]


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


llm = ScriptedLLM(
    [
        ToolCall("call_1", "price", {"fruit": "pear"}),
        ToolCall("call_2", "multiply", {"a": 0.75, "b": "six"}),  # wrong: "six" is not a number
        ToolCall("call_3", "multiply", {"a": 0.75, "b": 6}),
        "Six pears cost 4.50 euros.",
    ]
)

shopping = Chain(
    name="shopping",
    description="Answer questions about fruit prices",
    llm=llm,
    system_prompt="Use the tools to look up prices and compute totals.",
    prompt="{{ input }}",
    tools=[price, multiply],
)


def main() -> None:
    result = shopping.run("How much do six pears cost?")
    for record in result.tool_returns:
        outcome = f"error: {record['error']}" if record["error"] else f"-> {record['result']}"
        print(f"{record['tool']}({record['arguments']}) {outcome}")
    print("answer:", result.content)
    print(f"usage: {result.usage.total_tokens} tokens in {result.usage.requests} LLM calls")


if __name__ == "__main__":
    main()
