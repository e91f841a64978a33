"""A plan run's chain result (content, usage, logs) is written when first read, once."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain import Chain, ScriptedLLM, TFChainInterpreter
from dcbrain.chain import ChainConsoleResult, _plan_result
from dcbrain.chain.result import ChainResult


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def test_the_chain_result_is_written_when_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[ChainResult] = []
    real = _plan_result.plan_chain_result

    def counted(*args: Any) -> ChainResult:
        written.append(real(*args))
        return written[-1]

    monkeypatch.setattr(_plan_result, "plan_chain_result", counted)
    shout = Chain(name="shout", description="Say it loudly", llm=ScriptedLLM(["A!"]))
    interpreter = TFChainInterpreter({"shout": shout}, tools=[word_count])
    result = interpreter.evaluate("s = shout(input='a')\n{'s': s, 'n': word_count(text='a b')}")
    assert result.value == {"s": "A!", "n": 2} and written == []
    chain_result = result.chain_result
    assert written == [chain_result] and result.chain_result is chain_result
    assert chain_result.content == {"s": "A!", "n": 2}
    assert chain_result.usage.requests == result.usage.requests == 1
    assert [line.split(" -> ")[0] for line in chain_result.logs[:2]] == [
        "plan call 1 at 1:5: shout(input='a')", "plan call 2 at 2:15: word_count(text='a b')"]
    assert chain_result.logs[2] == "chain 'shout': scripted replied"


def test_a_chain_console_result_takes_a_chain_result_or_what_makes_it() -> None:
    given = ChainConsoleResult(value=1, chain_result=ChainResult(content="x"))
    assert given.chain_result.content == "x"
    made: list[ChainResult] = []
    lazy = ChainConsoleResult(value=1, chain_result=lambda: made.append(ChainResult("y"))
                              or made[-1])
    assert made == [] and lazy.chain_result.content == "y" and len(made) == 1
    assert lazy.chain_result is made[0] and len(made) == 1
    with pytest.raises(TypeError, match="chain_result"):
        ChainConsoleResult(value=1)  # type: ignore[call-arg]
