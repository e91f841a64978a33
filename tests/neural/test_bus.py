"""Neural: registry, ordered publish/subscribe, request/response with timeouts, user new input."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from dcbrain.exceptions import TFNeuralError, TFNeuralTimeoutError, TFUserNewInputError
from dcbrain.memory import SQLiteMemory
from dcbrain.neural import USER_INPUT_SIGNAL, Neural, Signal

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
    neural.unregister("chain", "summarize")
    with pytest.raises(KeyError, match="no chain named 'summarize'"):
        neural.lookup("chain", "summarize")


# -- publish / subscribe ---------------------------------------------------------------


async def test_each_subscriber_gets_signals_in_publish_order() -> None:
    neural = Neural()
    fast: list[int] = []
    slow: list[int] = []

    async def slow_handler(signal: Signal) -> None:
        await asyncio.sleep(0.001 * (signal.payload % 3))  # uneven handling times
        slow.append(signal.payload)

    neural.subscribe("tick", lambda signal: fast.append(signal.payload))
    neural.subscribe("tick", slow_handler)
    for n in range(50):
        neural.publish("tick", n)
    await neural.drain()

    assert fast == list(range(50))
    assert slow == list(range(50))


async def test_handlers_get_only_their_signal_unless_subscribed_to_all() -> None:
    neural = Neural()
    ticks: list[str] = []
    everything: list[str] = []
    neural.subscribe("tick", lambda signal: ticks.append(signal.name))
    neural.subscribe("*", lambda signal: everything.append(signal.name))

    neural.publish("tick")
    neural.publish("tock")
    await neural.drain()

    assert ticks == ["tick"]
    assert everything == ["tick", "tock"]


async def test_a_failing_handler_is_logged_and_delivery_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    neural = Neural()
    received: list[int] = []

    def handler(signal: Signal) -> None:
        if signal.payload == 1:
            raise RuntimeError("boom")
        received.append(signal.payload)

    neural.subscribe("n", handler)
    with caplog.at_level(logging.ERROR, logger="dcbrain.neural"):
        for n in range(3):
            neural.publish("n", n)
        await neural.drain()

    assert received == [0, 2]
    assert "boom" in caplog.text


async def test_a_cancelled_subscription_receives_nothing_more() -> None:
    neural = Neural()
    received: list[int] = []
    subscription = neural.subscribe("n", lambda signal: received.append(signal.payload))
    neural.publish("n", 1)
    await neural.drain()
    subscription.cancel()
    neural.publish("n", 2)
    await neural.drain()
    assert received == [1]


async def test_publishing_from_another_thread_is_delivered_in_order() -> None:
    neural = Neural()
    received: list[int] = []
    neural.subscribe("n", lambda signal: received.append(signal.payload))
    neural.publish("n", 0)  # binds the bus to this loop

    def publish_more() -> None:
        for n in range(1, 30):
            neural.publish("n", n)

    await asyncio.to_thread(publish_more)
    await neural.drain()
    assert received == list(range(30))


def test_publishing_before_any_event_loop_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="needs a running event loop"):
        Neural().publish("n", 1)


# -- request / response ----------------------------------------------------------------


async def test_request_gets_the_responders_answer() -> None:
    neural = Neural()

    async def search(payload: dict[str, Any]) -> list[str]:
        return [f"result for {payload['q']}"]

    neural.respond("tool:search", search)
    neural.respond("tool:upper", lambda payload: payload.upper())

    assert await neural.request("tool:search", {"q": "cats"}) == ["result for cats"]
    assert await neural.request("tool:upper", "abc", timeout=5) == "ABC"


async def test_a_slow_responder_times_out_cleanly() -> None:
    neural = Neural()
    release = asyncio.Event()

    async def never_answers(payload: Any) -> None:
        await release.wait()

    neural.respond("tool:stuck", never_answers)
    with pytest.raises(TFNeuralTimeoutError, match=r"no response to 'tool:stuck' within 0\.05s"):
        await neural.request("tool:stuck", timeout=0.05)
    assert issubclass(TFNeuralTimeoutError, TimeoutError)


async def test_a_slow_sync_responder_times_out_without_blocking_the_loop() -> None:
    neural = Neural()
    release = threading.Event()
    neural.respond("tool:blocking", lambda payload: release.wait(30))
    try:
        with pytest.raises(TFNeuralTimeoutError):
            await neural.request("tool:blocking", timeout=0.05)
    finally:
        release.set()


async def test_a_responders_own_errors_pass_through_unchanged() -> None:
    neural = Neural()

    async def fails(payload: Any) -> None:
        raise TimeoutError("the upstream API timed out")

    neural.respond("tool:fails", fails)
    with pytest.raises(TimeoutError, match="upstream API") as caught:
        await neural.request("tool:fails", timeout=10)
    assert not isinstance(caught.value, TFNeuralTimeoutError)


async def test_requests_without_a_responder_and_double_responders_are_errors() -> None:
    neural = Neural()
    with pytest.raises(TFNeuralError, match="no responder for signal 'tool:none'"):
        await neural.request("tool:none")
    neural.respond("tool:x", lambda payload: 1)
    with pytest.raises(ValueError, match="already has a responder"):
        neural.respond("tool:x", lambda payload: 2)
    neural.respond("tool:x", lambda payload: 2, replace=True)
    assert await neural.request("tool:x") == 2
    neural.stop_responding("tool:x")
    with pytest.raises(TFNeuralError):
        await neural.request("tool:x")


async def test_tools_are_dispatched_through_signals() -> None:
    neural = Neural()

    def add(a: int, b: int) -> int:
        return a + b

    async def fetch(url: str) -> str:
        return f"<html>{url}</html>"

    neural.register_tool("add", add)
    neural.register_tool("fetch", fetch)
    add_proxy = neural.tool_proxy("add")

    assert neural.lookup("tool", "add") is add
    assert add_proxy.__name__ == "add"
    assert await add_proxy(a=2, b=3) == 5
    assert await neural.request("tool:fetch", {"url": "x"}) == "<html>x</html>"


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


async def test_user_input_is_also_a_signal() -> None:
    neural = Neural()
    seen: list[Any] = []
    neural.subscribe(USER_INPUT_SIGNAL, lambda signal: seen.append(signal.payload))
    neural.publish("bind", None)

    await asyncio.to_thread(neural.post_user_input, "c1", "stop")
    await neural.drain()

    assert seen == [{"conversation_id": "c1", "text": "stop"}]
    assert neural.take_user_input("c1") == "stop"


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


def test_the_bus_survives_a_new_event_loop() -> None:
    neural = Neural()
    received: list[int] = []
    neural.subscribe("n", lambda signal: received.append(signal.payload))

    async def publish(n: int) -> None:
        neural.publish("n", n)
        await neural.drain()

    asyncio.run(publish(1))
    asyncio.run(publish(2))
    assert received == [1, 2]
