"""Odd values in a served run: an int too long for decimal (from a tool and from the plan),
NaN and infinities, a lone surrogate as a dict key. The run ends as its plan says, and
every response, streamed event and stored event is JSON proper (no ``NaN``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.memory import Memory
from support.brain_scripts import plan, verdict
from support.server_app import BrainScripts, ServeFn

BIG = 10**5000

ODD_PLAN = """\
n = big()
bits = bit_length(n=n * 10)
return {"big": n, "own": -(10 ** 5000), "floats": [float("nan"), float("-inf")],
        chr(0xD800): "key", "bits": bits}"""

EXPECTED = {"big": hex(BIG), "own": hex(-BIG), "floats": ["nan", "-inf"], "\ufffd": "key",
            "bits": (BIG * 10).bit_length()}


def big() -> int:
    """An int of 5001 digits."""
    return BIG


def bit_length(n: int) -> int:
    """How many bits ``n`` has."""
    return n.bit_length()


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON proper: ``NaN`` and ``Infinity`` are refused."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("isolation", ["process", "inprocess"])
def test_a_run_with_odd_values_succeeds_and_every_surface_writes_json(
    serve: ServeFn, brains: BrainScripts, memory: Memory, isolation: Any
) -> None:
    def odd_brain(memory: Memory) -> DCBrain:
        return DCBrain(default_llm=ScriptedLLM([plan(ODD_PLAN)]),
                       default_validate_llm=ScriptedLLM([verdict(True)]), tools=[big, bit_length],
                       memory=memory, isolation=isolation)

    brains.then(odd_brain)
    with serve() as api:
        run_id = api.send("c1", "odd values, please")
        events_response = api.http.get(f"/v1/runs/{run_id}/events")
        run_response = api.http.get(f"/v1/runs/{run_id}")
        conversation_response = api.http.get("/v1/conversations/c1")
    streamed = [strict_json(line[len("data:"):]) for line in events_response.text.splitlines()
                if line.startswith("data:")]
    run = strict_json(run_response.text)
    assert run["status"] == "succeeded", run
    assert run["result"]["final_result"] == EXPECTED
    assert streamed[-1] == {"run_id": run_id, "status": "succeeded"}
    finished = [e for e in streamed if e.get("type") == "call_finished" and e["name"] == "big"]
    assert finished[0]["result"] == {"truncated": True, "size": len(hex(BIG)),
                                     "preview": hex(BIG)[:2000]}
    assert streamed[-2]["type"] == "final" and streamed[-2]["final_result"] == EXPECTED
    started = [e for e in streamed if e.get("type") == "call_started"
               and e["name"] == "bit_length"]
    assert started[0]["args"]["n"]["preview"] == hex(BIG * 10)[:500]
    stored = memory.run_events(run_id)
    assert [record.event for record in stored] == streamed[:-1]
    answer = strict_json(conversation_response.text)["messages"][-1]["content"]
    assert strict_json(answer) == EXPECTED
