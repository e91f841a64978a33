"""Eager execution: how much sooner a run ends when its read-only calls start while the
planner is still writing the plan.

    python benchmarks/streaming.py [--tokens-per-second 40] [--runs 1]

Plans of 4 to 8 statements: read-only tools (``side_effects=False``) that take 0.3 to
1 s each, then one call with side effects at the end. The planner is ``OpenAILLM``
against the scripted OpenAI-compatible server (``dcbrain.llm.fake_server``, real HTTP on
loopback) streaming at ``--tokens-per-second``. Each plan runs with ``eager=False`` and
``eager=True`` in the same process; printed per plan: seconds from the start of the run
to its first tool call (as the tool sees it) and to its end, for both, and how much lower
eager's end-to-end time is. Last, the totals over all plans.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dcbrain import DCBrain, OpenAILLM, ScriptedLLM, Tool
from dcbrain.llm.fake_server import ScriptedOpenAIServer

#: When each tool call began (``time.perf_counter()``), as the tools see it.
STARTS: list[float] = []


def fetch(key: str, seconds: float) -> str:
    """Fetch a record by key (takes ``seconds``)."""
    STARTS.append(time.perf_counter())
    time.sleep(seconds)
    return f"<{key}>"


def store(text: str) -> str:
    """Store a text (a call with side effects)."""
    return f"stored {len(text)} chars"


#: Per plan, the seconds each read-only call takes.
PLANS: list[list[float]] = [
    [0.3, 0.5, 0.4],
    [0.6, 0.3, 1.0, 0.4],
    [0.5, 0.8, 0.3, 0.6, 0.4],
    [0.4, 0.3, 0.7, 1.0, 0.5, 0.3, 0.6],
]


def plan_text(seconds: list[float]) -> str:
    lines = [f'r{index} = fetch(key="record-{index}", seconds={value})'
             for index, value in enumerate(seconds)]
    joined = " + ".join(f"r{index}" for index in range(len(seconds)))
    lines.append(f"return store(text={joined})")
    return "\n".join(lines)


def reply(source: str) -> str:
    return f"Here is the plan.\n```tf_plan\n{source}\n```"


def one_run(source: str, eager: bool, rate: float) -> tuple[float, float]:
    """Seconds to the first tool call and to the end of the run."""
    with ScriptedOpenAIServer([reply(source)], tokens_per_second=rate) as server:
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0)
        brain = DCBrain(default_plan_llm=llm,
                        default_llm=ScriptedLLM([{"is_solved": True, "suggestion": ""}]),
                        tools=[Tool(fetch, side_effects=False), Tool(store)], eager=eager)
        STARTS.clear()
        started = time.perf_counter()
        result = brain.run("gather the records and store them")
        total = time.perf_counter() - started
    assert result.status == "succeeded", result.error
    return STARTS[0] - started, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens-per-second", type=float, default=40.0)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    DCBrain(default_llm=ScriptedLLM([])).warm_up()
    one_run(plan_text([0.1]), False, 1000.0)  # the first run loads what later ones reuse
    totals = {False: 0.0, True: 0.0}
    print(f"planner streaming at {args.tokens_per_second:g} tokens/s; medians of "
          f"{args.runs} run(s)")
    print(f"{'statements':>10} {'tools s':>8} | {'first call':>10} {'end':>6} | "
          f"{'eager first':>11} {'end':>6} | {'lower':>6}")
    for seconds in PLANS:
        source = plan_text(seconds)
        measured: dict[bool, tuple[float, float]] = {}
        for eager in (False, True):
            runs = [one_run(source, eager, args.tokens_per_second) for _ in range(args.runs)]
            measured[eager] = (statistics.median(r[0] for r in runs),
                               statistics.median(r[1] for r in runs))
            totals[eager] += measured[eager][1]
        lower = 1 - measured[True][1] / measured[False][1]
        print(f"{len(seconds) + 1:>10} {sum(seconds):>8.1f} | {measured[False][0]:>10.2f} "
              f"{measured[False][1]:>6.2f} | {measured[True][0]:>11.2f} "
              f"{measured[True][1]:>6.2f} | {lower:>6.0%}")
    print(f"all plans: {totals[False]:.2f} s without eager execution, {totals[True]:.2f} s "
          f"with it: {1 - totals[True] / totals[False]:.0%} lower")


if __name__ == "__main__":
    main()
