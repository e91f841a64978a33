"""Plans in sandbox processes against plans in process, measured in the same run.

    python benchmarks/sandbox.py [--repeat N]

Prints, per script of ``benchmarks/interpreter.py``, the best-of-N time in process and
through a sandbox worker; the overhead of one host call each way (goal through the
pipe: at most 50 us); and plan throughput (small plans, one after another, and from
four threads at once). The bare socket round trip between two processes, measured in
the same run, is the floor of a host call through the pipe on this machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from interpreter import HOST_CALLS, SCRIPTS, best_of, cpython_runner

from dcbrain.tfplan import Interpreter, Limits

SMALL_PLAN = "total = add(a=1, b=2)\nitems = [total * i for i in range(10)]\nsum(items)"


def add(a: int, b: int) -> int:
    return a + b


def echo(x: int) -> int:
    return x


def interpreters(**options: Any) -> dict[str, Interpreter]:
    return {mode: Interpreter(isolation=mode, **options)  # type: ignore[arg-type]
            for mode in ("inprocess", "process")}


def host_call_overhead(interpreter: Interpreter, baseline: Interpreter, repeat: int) -> float:
    loop_only = HOST_CALLS.replace("echo(x=i)", "i")
    calls = best_of(repeat, lambda: interpreter.run(HOST_CALLS))
    loop = best_of(repeat, lambda: baseline.run(loop_only))
    return (calls - loop) / 2000 * 1e6


def socket_round_trip(count: int = 5000) -> float:
    """Microseconds of one 60-byte round trip to a forked process: this machine's floor."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        while data := theirs.recv(100):
            theirs.sendall(data)
        os._exit(0)
    theirs.close()
    started = time.perf_counter()
    for _ in range(count):
        ours.sendall(b"x" * 60)
        ours.recv(100)
    elapsed = time.perf_counter() - started
    ours.close()
    os.waitpid(pid, 0)
    return elapsed / count * 1e6


def throughput(run: Callable[[], Any], seconds: float, threads: int = 1) -> float:
    """Plans per second over ``seconds`` with ``threads`` callers."""
    done = [0] * threads
    stop = time.perf_counter() + seconds

    def caller(index: int) -> None:
        while time.perf_counter() < stop:
            run()
            done[index] += 1

    workers = [threading.Thread(target=caller, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(done) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    limits = Limits(max_operations=50_000_000, max_calls=10_000)
    modes = interpreters(limits=limits)
    modes["process"].run("0")  # start the pool before measuring
    print(f"{'script':<16}{'cpython ms':>12}{'in-process ms':>15}{'ratio':>8}"
          f"{'workers ms':>12}{'ratio':>8}")
    for name, source in SCRIPTS.items():
        reference = best_of(args.repeat, cpython_runner(source))
        times = {mode: best_of(args.repeat, lambda i=i, s=source: i.run(s))
                 for mode, i in modes.items()}
        print(f"{name:<16}{reference * 1e3:>12.2f}"
              f"{times['inprocess'] * 1e3:>15.2f}{times['inprocess'] / reference:>8.2f}"
              f"{times['process'] * 1e3:>12.2f}{times['process'] / reference:>8.2f}")
    with_calls = interpreters(callables={"echo": echo}, limits=limits)
    for mode in ("inprocess", "process"):
        overhead = host_call_overhead(with_calls[mode], modes[mode], args.repeat)
        print(f"host-call overhead per sync call ({mode}): {overhead:.1f} us")
    print(f"bare socket round trip to another process (the floor): "
          f"{socket_round_trip():.1f} us")
    small = interpreters(callables={"add": add})
    for mode in ("inprocess", "process"):
        one = throughput(lambda i=small[mode]: i.run(SMALL_PLAN), 2.0)
        four = throughput(lambda i=small[mode]: i.run(SMALL_PLAN), 2.0, threads=4)
        print(f"small plans per second ({mode}): {one:.0f} from one thread, "
              f"{four:.0f} from four")


if __name__ == "__main__":
    main()
