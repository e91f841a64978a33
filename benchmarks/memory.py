"""Commit and recall latency of SQLiteMemory (or PostgresMemory) as a conversation grows.

    python benchmarks/memory.py            # 10k and 100k messages
    python benchmarks/memory.py --quick    # 1k and 10k messages
    python benchmarks/memory.py --backend postgres   # PostgresMemory on a private cluster

The store is a real file in a temporary directory (WAL, synchronous=FULL), or a private
PostgreSQL cluster (Debian's binaries, ``pip install -e ".[durable]"``). Messages are
synthetic sentences from a Zipf-distributed vocabulary, all in one conversation (the
worst case for recall), with 20 other conversations of background noise. At each size it
reports the median and p95 of single commits, of full recalls with the default budget
(16384 cl100k tokens per section) and of searches, and the growth ratio between sizes.

Recall is also measured on the same file with every query word kept
(``frequent_term_share=None``): the reference for what leaving very frequent words out
saves, measured in the same run. Besides wall time it reports this process's CPU time
per recall, which other load on the machine disturbs less.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from dcbrain.memory import Memory, SQLiteMemory

VOCABULARY = [f"w{n}" for n in range(5000)]
CUMULATIVE_WEIGHTS = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(5000)))


def sentence(rng: random.Random) -> str:
    words = rng.choices(VOCABULARY, cum_weights=CUMULATIVE_WEIGHTS, k=rng.randint(5, 40))
    return " ".join(words)


def timed(function: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def cpu_timed(function: Callable[..., object], *args: object) -> float:
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.95)] * 1e3


def open_memories(backend: str, stack: ExitStack) -> tuple[Memory, Memory]:
    """The memory under test and one on the same data searching with every word."""
    if backend == "sqlite":
        path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "bench.db"
        return SQLiteMemory(path), SQLiteMemory(path, frequent_term_share=None)
    from dcbrain.durable import PostgresMemory
    from dcbrain.durable.testing import fresh_database, postgres_bindir, private_postgres

    bindir = postgres_bindir()
    if bindir is None:
        raise SystemExit("PostgreSQL binaries not found (apt-get install postgresql)")
    url = fresh_database(stack.enter_context(private_postgres(bindir)))
    return PostgresMemory(url), PostgresMemory(url, frequent_term_share=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1k and 10k messages")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [10_000, 100_000]
    rng = random.Random(7)
    queries = [sentence(rng)[:80] for _ in range(20)] + ["", "?!", "w1 w2 w3"]

    results: dict[int, dict[str, tuple[float, float]]] = {}
    with ExitStack() as stack:
        memory, every_word = open_memories(args.backend, stack)
        for n in range(200):
            memory.add_knowledge("main", sentence(rng))
            if n % 10 == 0:
                memory.add_document("main", "\n\n".join(sentence(rng) for _ in range(30)))
        committed = 0
        started = time.perf_counter()
        for size in sizes:
            commit_times: list[float] = []
            while committed < size:
                role = "user" if committed % 2 == 0 else "assistant"
                text = sentence(rng)
                if committed % 50 == 0:  # background conversations
                    memory.commit_message(f"other-{committed % 20}", text)
                commit_times.append(timed(memory.commit_message, "main", text, role))
                committed += 1
            memory.recall("main", "warm up")
            every_word.recall("main", "warm up")
            results[size] = {
                "commit": summary(commit_times[-1000:]),
                "recall": summary([timed(memory.recall, "main", q) for q in queries]),
                "recall cpu": summary([cpu_timed(memory.recall, "main", q) for q in queries]),
                "reference": summary([timed(every_word.recall, "main", q) for q in queries]),
                "search": summary([timed(memory.search, q, "main") for q in queries]),
            }
            print(f"{size:>7} messages (filled in {time.perf_counter() - started:5.1f}s):")
            for name, (median, p95) in results[size].items():
                print(f"  {name:<10} median {median:8.2f} ms   p95 {p95:8.2f} ms")
            ratio = results[size]["recall"][0] / results[size]["reference"][0]
            print(f"  recall / reference (every query word kept): {ratio:5.2f}x")
        every_word.close()
        memory.close()

    small, large = sizes
    print(f"growth {small} -> {large} messages ({large // small}x data), median ratio:")
    for name in ("commit", "recall", "search"):
        ratio = results[large][name][0] / results[small][name][0]
        print(f"  {name:<10} {ratio:5.2f}x")
    wall, cpu = results[large]["recall"][0], results[large]["recall cpu"][0]
    print(f"goal: recall median <= 30 ms at {large} messages: {wall:.1f} ms wall, {cpu:.1f} ms cpu")


if __name__ == "__main__":
    main()
