"""The plan as it is written: how soon a run shows its plan, and what streaming costs.

    python benchmarks/plan_deltas.py [--tokens-per-second 40] [--lines 8] [--runs 3]

A brain run whose planner is ``OpenAILLM`` against the scripted OpenAI-compatible server
(``dcbrain.llm.fake_server``, real HTTP on loopback) writing a plan of ``--lines``
statements at ``--tokens-per-second``, streamed (the default) and with ``stream=False``,
in the same process. Printed per mode, medians over ``--runs``: seconds from the start
of the run to its first ``plan_delta`` (the first plan text shown) and to
``plan_created`` (the whole plan), the whole run, and the number of ``plan_delta``
events against the reply's tokens (at most about 20 a second). Then the same plan sent
unpaced: the events a fast model makes, and streamed over unstreamed end-to-end time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from dcbrain import DCBrain, OpenAILLM
from dcbrain.events import Event, PlanCreated, PlanDelta
from dcbrain.llm.fake_server import ScriptedOpenAIServer
from dcbrain.llm.testing import token_pieces


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def plan_reply(lines: int) -> str:
    body = ["total = add(a=0, b=1)"]
    body += [f"total = add(a=total, b={n})  # step {n} of the sum" for n in range(2, lines)]
    body.append("return total")
    return "Here is the plan.\n```tf_plan\n" + "\n".join(body) + "\n```"


def one_run(reply: str, rate: float | None, stream: bool) -> dict[str, Any]:
    verdict = json.dumps({"is_solved": True, "suggestion": ""})
    marks: dict[str, float] = {}
    deltas = 0
    with ScriptedOpenAIServer([reply, verdict], tokens_per_second=rate) as server:
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0, stream=stream)
        brain = DCBrain(default_llm=llm, tools=[add])
        started = time.perf_counter()

        def on_event(event: Event) -> None:
            nonlocal deltas
            now = time.perf_counter() - started
            if isinstance(event.payload, PlanDelta):
                deltas += 1
                marks.setdefault("first_text_s", now)
            elif isinstance(event.payload, PlanCreated):
                marks.setdefault("whole_plan_s", now)

        brain.subscribe(on_event)
        result = brain.run("sum it")
        marks["run_s"] = time.perf_counter() - started
    assert result.status == "succeeded", result.last_error
    marks.setdefault("first_text_s", marks["whole_plan_s"])  # unstreamed: all at once
    return {**marks, "deltas": deltas}


def median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens-per-second", type=float, default=40.0)
    parser.add_argument("--lines", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    reply = plan_reply(args.lines)
    tokens = len(token_pieces(reply))
    one_run(reply, None, True)  # warm up: the SDK's imports, the first connection
    print(f"plan of {args.lines} statements, {tokens} tokens, "
          f"at {args.tokens_per_second:g} tokens/s; medians of {args.runs} runs")
    print(f"{'mode':<10} {'first text s':>13} {'whole plan s':>13} {'run s':>8} {'deltas':>7}")
    results: dict[bool, list[dict[str, Any]]] = {}
    for stream in (True, False):
        runs = [one_run(reply, args.tokens_per_second, stream) for _ in range(args.runs)]
        results[stream] = runs
        print(f"{'streamed' if stream else 'whole':<10} {median(runs, 'first_text_s'):>13.2f} "
              f"{median(runs, 'whole_plan_s'):>13.2f} {median(runs, 'run_s'):>8.2f} "
              f"{median(runs, 'deltas'):>7.0f}")
    streamed, whole = results[True], results[False]
    shown = median(streamed, "first_text_s") / median(whole, "first_text_s")
    rate = median(streamed, "deltas") / median(streamed, "whole_plan_s")
    print(f"first text shown after {shown:.2f} of the unstreamed wait; "
          f"plan_delta events per second of the run until the plan: {rate:.1f}")
    fast = {stream: [one_run(reply, None, stream) for _ in range(args.runs)]
            for stream in (True, False)}
    ratio = median(fast[True], "run_s") / median(fast[False], "run_s")
    print(f"unpaced: {median(fast[True], 'deltas'):.0f} plan_delta events for {tokens} tokens; "
          f"run {median(fast[True], 'run_s'):.3f}s streamed, {median(fast[False], 'run_s'):.3f}s "
          f"unstreamed: ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
