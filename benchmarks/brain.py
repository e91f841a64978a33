"""DCBrain framework overhead and the speedup of ``parallel(...)``, offline.

    python benchmarks/brain.py [--cycles N] [--repeat N]

1. Overhead: one plan -> run -> validate cycle with zero-latency scripted LLMs (the
   plan calls one tool), best of ``--repeat`` batches of ``--cycles`` runs of one
   ``DCBrain`` (a brain is configuration; each question is a run of its own); reported
   in microseconds per cycle, with plans run in the sandbox worker processes (the
   default) and in process. CPU counts this process and its descendants (the sandbox
   workers, read from ``/proc``); every run's plan text differs (as every real question
   gives a new plan), so no cache keyed on a plan's text is hit for free. Everything but
   the LLMs is real: the state machine, prompts, token counting and budget, the sandboxed
   plan run, events.
2. Latency: a plan with 8 independent chain calls whose LLM takes 200 ms each, written
   with ``parallel(...)`` and written sequentially; reports both and the speedup.
3. Abort: a plan runs 4 tools in ``parallel(...)`` that each block for 5 s; ``abort()``
   is called once all have started; reports the time until the run returned ``aborted``
   (median of 5) — every open call is closed with status ``aborted`` by then.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from typing import Any

from dcbrain import Chain, DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.tfplan import Limits
from dcbrain.tfplan.interpreter import Isolation

CHAIN_LATENCY_S = 0.2
CALLS = 8


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def descendants_cpu_s() -> float:
    """CPU seconds of every descendant process of this one (utime + stime + cutime +
    cstime from ``/proc``; 0 where there is no ``/proc``)."""
    table: dict[int, list[tuple[int, list[bytes]]]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2:].split()
        table.setdefault(int(fields[1]), []).append((int(entry), fields))
    total, todo = 0, [os.getpid()]
    while todo:
        for child, fields in table.get(todo.pop(), []):
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
            todo.append(child)
    return total / _TICK


def cpu_s() -> float:
    """CPU seconds of this process and all its descendants."""
    return time.process_time() + descendants_cpu_s()


async def overhead_us(
    cycles: int, repeat: int, isolation: Isolation = "process"
) -> tuple[float, float]:
    """Best mean microseconds of one full cycle (planning, plan run, validation): wall
    time, and CPU time of this process and its sandbox workers (steadier on a busy
    machine). Each run's plan differs (a comment naming the run)."""
    best = best_cpu = float("inf")
    reply_verdict = {"is_solved": True, "suggestion": ""}
    for batch in range(repeat):
        replies: list[Any] = []
        for index in range(cycles):
            replies += [f"```tf_plan\n# run {batch}-{index}\nreturn add(a=1, b={index})\n```",
                        reply_verdict]
        llm = ScriptedLLM(replies)
        brain = DCBrain(default_llm=llm, tools=[add], limits=Limits(), isolation=isolation)
        started, cpu = time.perf_counter(), cpu_s()
        for index in range(cycles):
            result = await brain.async_run(f"1 + {index}? ({batch}-{index})",
                                           conversation_id=f"bench-{index}")
            assert result.final_result == 1 + index, result.reason
        best = min(best, (time.perf_counter() - started) / cycles)
        best_cpu = min(best_cpu, (cpu_s() - cpu) / cycles)
    return best * 1e6, best_cpu * 1e6


async def plan_latency_s(parallel: bool) -> float:
    async def slow(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(CHAIN_LATENCY_S)
        return "done"

    chain = Chain(name="lookup", description="A slow lookup", llm=FunctionLLM(slow),
                  prompt="Look up {{ key }}")
    calls = [f"lookup(key='k{i}')" for i in range(CALLS)]
    if parallel:
        source = f"results = parallel({', '.join(calls)})\nreturn len(results)"
    else:
        source = "results = []\n" + "".join(f"results.append({c})\n" for c in calls) + \
            "return len(results)"
    llm = ScriptedLLM([f"```tf_plan\n{source}\n```", {"is_solved": True, "suggestion": ""}])
    brain = DCBrain(spec_chains={"lookup": chain}, default_llm=llm)
    started = time.perf_counter()
    result = await brain.async_run("look up 8 keys", conversation_id="bench")
    elapsed = time.perf_counter() - started
    assert result.final_result == CALLS, result.reason
    return elapsed


async def abort_latency_s() -> float:
    """Seconds from ``abort()`` to the aborted result, while tools block in parallel."""
    started = threading.Semaphore(0)
    release = threading.Event()

    def block(n: int) -> int:
        """Blocks like a slow synchronous API call."""
        started.release()
        release.wait(5)
        return n

    source = "a, b, c, d = parallel(block(n=1), block(n=2), block(n=3), block(n=4))\n" \
        "return a + b + c + d"
    brain = DCBrain(default_llm=ScriptedLLM([f"```tf_plan\n{source}\n```"]), tools=[block])
    task = asyncio.create_task(brain.async_run("block", conversation_id="bench"))
    for _ in range(4):
        while not started.acquire(blocking=False):
            await asyncio.sleep(0.001)
    asked = time.perf_counter()
    brain.abort()
    result = await task
    elapsed = time.perf_counter() - asked
    release.set()
    assert result.status == "aborted", result.reason
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for isolation in ("process", "inprocess"):
        await overhead_us(20, 1, isolation)  # warm up caches (encodings, compiled plans)
        per_cycle, cpu = await overhead_us(args.cycles, args.repeat, isolation)
        print(f"framework overhead per plan->run->validate cycle, plans {isolation}: "
              f"{per_cycle:,.0f} us wall, {cpu:,.0f} us CPU of this process and its workers "
              f"(best of {args.repeat} x {args.cycles} runs, zero-latency scripted LLMs)")
    sequential = await plan_latency_s(parallel=False)
    concurrent = await plan_latency_s(parallel=True)
    print(f"{CALLS} independent chain calls of {CHAIN_LATENCY_S * 1000:.0f} ms each: "
          f"sequential {sequential:.3f} s, parallel(...) {concurrent:.3f} s, "
          f"speedup {sequential / concurrent:.1f}x")
    aborts = sorted([await abort_latency_s() for _ in range(5)])
    print(f"abort while 4 tools block in parallel(...): {aborts[2] * 1000:.0f} ms to the aborted "
          f"result (median of 5; max {aborts[-1] * 1000:.0f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
