"""Neural: the mailbox of new user input by conversation, and named objects by kind."""

from __future__ import annotations

import asyncio
import threading

import pytest

from dcbrain.exceptions import TFUserNewInputError
from dcbrain.memory import SQLiteMemory
from dcbrain.neural import Neural

# -- registry --------------------------------------------------------------------------


def test_register_and_lookup_by_kind_and_name() -> None:
    neural = Neural()
    memory = SQLiteMemory(":memory:")
    neural.register("memory", "default", memory)
    neural.register("chain", "summarize", "chain-object")

    assert neural.lookup("memory", "default") is memory
    assert neural.registered("chain") == {"summarize": "chain-object"}
    assert neural.registered("llm") == {}

    neural.register("chain", "summarize", "replacement")
    assert neural.lookup("chain", "summarize") == "replacement"
    with pytest.raises(KeyError, match="no chain named 'other'"):
        neural.lookup("chain", "other")


# -- user new input --------------------------------------------------------------------


def test_user_input_waits_per_conversation_until_taken() -> None:
    neural = Neural()
    assert neural.pending_user_input("c1") is None
    neural.raise_if_new_input("c1")  # nothing pending: a safe point passes

    neural.post_user_input("c1", "actually, make it shorter")
    neural.post_user_input("c1", "and in French")

    assert neural.pending_user_input("c2") is None
    assert neural.pending_user_input("c1") == "actually, make it shorter\nand in French"
    with pytest.raises(TFUserNewInputError) as caught:
        neural.raise_if_new_input("c1")
    assert caught.value.new_input == "actually, make it shorter\nand in French"
    assert neural.pending_user_input("c1") is None
    neural.raise_if_new_input("c1")


async def test_a_run_stops_at_its_next_safe_point_after_new_input() -> None:
    neural = Neural()
    steps: list[int] = []

    async def run() -> None:
        for step in range(1000):
            neural.raise_if_new_input("c1")  # between chain calls
            steps.append(step)
            await asyncio.sleep(0.001)

    task = asyncio.create_task(run())
    while not steps:
        await asyncio.sleep(0.001)
    neural.post_user_input("c1", "new question")
    with pytest.raises(TFUserNewInputError) as caught:
        await task
    assert caught.value.new_input == "new question"
    assert len(steps) < 1000


def test_input_posted_from_other_threads_is_kept_in_order() -> None:
    neural = Neural()
    threads = [threading.Thread(target=neural.post_user_input, args=("c1", str(n)))
               for n in range(8)]
    for thread in threads:
        thread.start()
        thread.join()
    assert neural.take_user_input("c1") == "\n".join(str(n) for n in range(8))
    assert neural.take_user_input("c1") is None
