"""The plan as it is written, over SSE: ``plan_delta`` events live and stored with the run."""

from __future__ import annotations

import json

from dcbrain import OpenAILLM
from dcbrain.brain import DCBrain
from dcbrain.llm.fake_server import ScriptedOpenAIServer
from dcbrain.memory import Memory
from support.brain_scripts import add, plan, verdict
from support.server_app import BrainScripts, ServeFn

PLAN = "a = add(a=1, b=2)\nb = add(a=a, b=3)\nreturn b"


def test_plan_deltas_stream_live_over_sse_and_are_stored_with_the_run(
    serve: ServeFn, brains: BrainScripts
) -> None:
    replies = [plan(PLAN), json.dumps(verdict(True))]
    with ScriptedOpenAIServer(replies, tokens_per_second=200) as llm_server:

        def streaming_brain(memory: Memory) -> DCBrain:
            llm = OpenAILLM("scripted-model", base_url=llm_server.base_url, api_key="none",
                            max_retries=0)
            return DCBrain(default_llm=llm, tools=[add], memory=memory)

        brains.then(streaming_brain)
        with serve() as api:
            run_id = api.send("c-stream", "What is 1 + 2 + 3?")
            live = api.stream(run_id)
            stored = api.stream(run_id)
    assert live.end is not None and live.end["status"] == "succeeded"
    types = [event["type"] for event in live.events]
    deltas = [event for event in live.events if event["type"] == "plan_delta"]
    assert len(deltas) >= 2
    assert types.index("plan_delta") < types.index("plan_created")
    assert max(i for i, kind in enumerate(types) if kind == "plan_delta") < types.index(
        "plan_created")
    offsets = [delta["offset"] for delta in deltas]
    assert offsets == [sum(len(d["text"]) for d in deltas[:i]) for i in range(len(deltas))]
    assert "".join(delta["text"] for delta in deltas) == plan(PLAN)
    assert all(delta["iteration"] == 1 and delta["run_id"] == run_id for delta in deltas)
    assert [int(ident or -1) for ident in live.ids] == [e["seq"] for e in live.events]
    assert stored.events == live.events  # stored as they went out
