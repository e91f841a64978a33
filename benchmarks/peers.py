"""dcbrain's per-run cost next to other agent frameworks', in one run, with a fake model.

    pip install -e ".[bench]"
    python benchmarks/peers.py [--frameworks dcbrain,pydantic_ai,smolagents,langgraph,openai_agents]
                               [--runs 200] [--repeats 5] [--rounds 1] [--warmup 50]
                               [--w3-runs 200] [--w3-latency 0.05] [--w3-repeats 3]
                               [--same-text]
                               [--no-w3] [--no-import] [--profile [--profile-workload w2]]
                               [--json results.json]

Frameworks missing from the environment are skipped (and said so); a variant can be named
alone (``dcbrain:inprocess``). Every framework answers the same question with the same
three plain Python tools and a model that answers at once (``_peers_variants.py``), so
what is measured is the framework's own cost:

W1  the model asks for the 3 tool calls, then answers (dcbrain: one tf_plan calling the
    3 tools, then the validator says solved).
W2  the same, but ``get_weather`` raises once: the framework reports the failure to the
    model, which retries (dcbrain: the plan fails, the planner writes a revised plan).
W3  ``--w3-runs`` W1 runs in flight at once (asyncio.gather where the framework is
    async, a thread per run where it is not), each model call taking ``--w3-latency`` s.

Each variant is measured in fresh subprocesses of this script, so frameworks never share a
heap, GC generations or imported modules:

* W1/W2: CPU time per run (``time.process_time()`` of the process plus the CPU of its
  descendant processes, e.g. dcbrain's plan sandbox workers, read from /proc) and wall
  time; the median over ``--rounds`` x ``--repeats`` batches of ``--runs`` runs, after
  ``--warmup`` runs. Rounds visit the variants in a rotated order, so a change of the
  machine's load hits them alike.
* W3: wall and CPU (process + descendants) of a burst, the median of ``--w3-repeats``
  bursts after a warm-up burst of 10; memory: the peak of the RSS summed over the
  worker's whole process tree (sampled every 50 ms), and how many processes that was.
* import: seconds to import what the benchmark uses of the framework in a fresh
  interpreter (median of 5); cold: import + build + first W1 run in a fresh interpreter.

Every run asks a different question (``(request N)``), which the fake echoes into dcbrain's
plan, as real traffic would: caches keyed on a text are not hit for free (``--same-text``
repeats one question). Every batch checks its result and every variant's model, tool and
error counts per run are shown. The output ends with each dcbrain row's ratio to the best
(lowest) peer of the same run, and the project's goals for the default (sandbox process)
mode: W1 CPU at most 0.8x and W2 CPU at most 1.0x the best peer's, the lowest W3 wall
time, and W3 memory at most the highest peer's.

``--profile`` adds a cProfile of dcbrain's W1 (``--profile-workload w2``: W2; every thread
merged, CPU-time timer) and lists dcbrain's own top functions by cumulative and own time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from _peers_variants import DISTRIBUTIONS, MODULES, OTHER_DISTRIBUTIONS, STATE, VARIANTS, Variant

FRAMEWORKS = list(MODULES)

# -- process-tree accounting (Linux /proc; elsewhere only this process is counted) ---------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _proc_table() -> dict[int, list[tuple[int, list[bytes]]]]:
    """parent pid -> [(pid, stat fields after the command name)]."""
    children: dict[int, list[tuple[int, list[bytes]]]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append((int(entry), fields))
    return children


def _descendants(pid: int) -> list[list[bytes]]:
    table = _proc_table()
    found, todo = [], [pid]
    while todo:
        for child, fields in table.get(todo.pop(), []):
            found.append(fields)
            todo.append(child)
    return found


def descendants_cpu_s(pid: int | None = None) -> float:
    """CPU seconds of every descendant of ``pid`` (default: this process), including the
    children they reaped (utime + stime + cutime + cstime)."""
    ticks = sum(int(fields[i]) for fields in _descendants(pid or os.getpid())
                for i in (11, 12, 13, 14))
    return ticks / _TICK


def tree_rss_bytes(pid: int) -> tuple[int, int]:
    """RSS of ``pid`` and all its descendants, summed (pages shared copy-on-write are
    counted once per process: an upper bound), and how many processes that is."""
    total = 0
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/statm") as f:
        total += int(f.read().split()[1]) * _PAGE
    descendants = _descendants(pid)
    total += sum(int(fields[21]) * _PAGE for fields in descendants)
    return total, 1 + len(descendants)


# -- workers (each in a fresh subprocess of this script) -----------------------------------


class _Counter:
    next = 0

    @classmethod
    def take(cls, n: int) -> int:
        start, cls.next = cls.next, cls.next + n
        return start


async def _batch(variant: Variant, n: int, failing: bool, offset: int) -> Any:
    result = None
    for i in range(n):
        if failing:
            STATE.failures_left = 1
        result = (variant.run_sync(offset + i) if variant.concurrency == "threads"
                  else await variant.arun(offset + i))
    return result


async def _measure(variant: Variant, n: int, failing: bool) -> dict[str, float]:
    gc.collect()
    offset = _Counter.take(n)
    d0 = descendants_cpu_s()
    c0, w0 = time.process_time(), time.perf_counter()
    result = await _batch(variant, n, failing, offset)
    w1, c1 = time.perf_counter(), time.process_time()
    d1 = descendants_cpu_s()
    variant.check(result)
    host, child = (c1 - c0) / n * 1e3, (d1 - d0) / n * 1e3
    return {"cpu_ms": host + child, "host_cpu_ms": host, "child_cpu_ms": child,
            "wall_ms": (w1 - w0) / n * 1e3}


async def _counts(variant: Variant, failing: bool) -> dict[str, int]:
    """Model calls, tool executions and tool errors of one run."""
    STATE.model_calls = STATE.tool_execs = STATE.tool_errors = 0
    STATE.failures_left = 1 if failing else 0
    variant.check(await variant.arun(_Counter.take(1)))
    assert STATE.failures_left == 0, f"{variant.name}: the failing tool was not called"
    return {"model_calls": STATE.model_calls, "tool_execs": STATE.tool_execs,
            "tool_errors": STATE.tool_errors}


def _summary(samples: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in samples[0]:
        values = [s[key] for s in samples]
        out[key] = statistics.median(values)
        out[key + "_all"] = values
    return out


async def worker_w12(variant: Variant, args: argparse.Namespace) -> dict[str, Any]:
    variant.setup(0.0)
    counts = {"w1": await _counts(variant, False), "w2": await _counts(variant, True)}
    await _measure(variant, args.warmup, False)
    await _measure(variant, max(args.warmup // 2, 1), True)
    w1, w2 = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        w1.append(await _measure(variant, args.runs, False))
        w2.append(await _measure(variant, args.runs, True))
    builds = []
    for _ in range(20):
        started = time.perf_counter()
        variant.build_only()
        builds.append((time.perf_counter() - started) * 1e3)
    return {"w1": _summary(w1), "w2": _summary(w2), "counts": counts,
            "build_ms": statistics.median(builds)}


async def worker_w3(variant: Variant, args: argparse.Namespace) -> dict[str, Any]:
    n, latency = args.w3_runs, args.w3_latency
    variant.setup(latency)

    agents: list[Any] = []
    pool = None
    if variant.concurrency == "threads":
        # an agent of a sync framework holds one run's memory: one agent per run in
        # flight, built before the burst (its build cost is the build column)
        agents = [variant.new_agent() for _ in range(n)]
        pool = ThreadPoolExecutor(max_workers=n)

    def threads(count: int, offset: int) -> list[Any]:
        assert pool is not None
        futures = [pool.submit(variant.run_sync, offset + i, agents[i]) for i in range(count)]
        return [f.result() for f in futures]

    async def burst(count: int, offset: int) -> list[Any]:
        if pool is not None:
            return await asyncio.get_running_loop().run_in_executor(None, threads, count, offset)
        return list(await asyncio.gather(*(variant.arun(offset + i) for i in range(count))))

    for result in await burst(min(10, n), _Counter.take(10)):  # warm up
        variant.check(result)
    bursts = []
    for _ in range(args.w3_repeats):
        gc.collect()
        offset = _Counter.take(n)
        d0 = descendants_cpu_s()
        c0, w0 = time.process_time(), time.perf_counter()
        results = await burst(n, offset)
        w1, c1 = time.perf_counter(), time.process_time()
        d1 = descendants_cpu_s()
        for result in results:
            variant.check(result)
        bursts.append({"wall_s": w1 - w0, "cpu_s": (c1 - c0) + (d1 - d0),
                       "host_cpu_s": c1 - c0, "child_cpu_s": d1 - d0})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {**_summary(bursts),
            "peak_rss_mb": peak / 1024 / (1024 if sys.platform == "darwin" else 1),
            "ideal_wall_s": latency * args.ideal_calls}


async def worker_cold(variant: Variant, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    variant.setup(0.0)
    built = time.perf_counter()
    variant.check(await variant.arun(0))
    done = time.perf_counter()
    return {"cold_s": done - started, "cold_build_s": built - started,
            "first_run_s": done - built}


def _retire_idle_drivers() -> None:
    """End the idle plan drivers (threads kept for the next plan runs): the runs measured
    next start their own, which the profiler then sees."""
    from dcbrain.tfplan import supervise

    with supervise._idle_lock:
        inboxes = list(supervise._idle)
        supervise._idle.clear()
    for inbox in inboxes:
        inbox.put(None)


async def worker_profile(variant: Variant, args: argparse.Namespace) -> dict[str, Any]:
    """cProfile every thread of ``args.runs`` runs of ``args.profile_workload`` (after the
    warm-up); the stats of dcbrain's own functions."""
    import cProfile
    import pstats

    import dcbrain

    variant.setup(0.0)
    failing = args.profile_workload == "w2"
    await _batch(variant, args.warmup, failing, _Counter.take(args.warmup))
    _retire_idle_drivers()  # the warm-up's drivers would run the plans unprofiled
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    original_run = threading.Thread.run

    def profiled_run(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)  # CPU time: a blocked wait costs nothing
        with lock:
            profiles.append(profile)
        profile.enable()
        try:
            original_run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    main = cProfile.Profile(time.thread_time)
    profiles.append(main)
    c0 = time.process_time()
    main.enable()
    await _batch(variant, args.runs, failing, _Counter.take(args.runs))
    main.disable()
    cpu = time.process_time() - c0
    threading.Thread.run = original_run  # type: ignore[method-assign]
    stats = pstats.Stats(main, stream=io.StringIO())
    for profile in profiles[1:]:
        with contextlib.suppress(TypeError):  # a thread that never ran
            stats.add(profile)
    if args.profile_out:  # the merged stats, for pstats / snakeviz
        workload = ".w2" if failing else ""
        stats.dump_stats(f"{args.profile_out}.{args.worker.replace(':', '.')}{workload}.pstats")
    root = os.path.dirname(os.path.abspath(dcbrain.__file__))
    per_run = 1e3 / args.runs
    rows: list[dict[str, Any]] = []
    by_module: dict[str, float] = {}
    total = 0.0
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tt
        if filename.startswith(root):
            key = os.path.relpath(filename, os.path.dirname(root))
            rows.append({"function": f"{key}:{line}({func})", "calls": nc,
                         "tottime_ms": tt * per_run, "cumtime_ms": ct * per_run})
        elif "site-packages" in filename:
            key = filename.split("site-packages" + os.sep, 1)[1].split(os.sep, 1)[0]
        elif filename.startswith(("~", "<")):
            key = "builtins/C"
        else:
            key = "stdlib:" + os.path.basename(filename)
        by_module[key] = by_module.get(key, 0.0) + tt * per_run
    return {"runs": args.runs, "workload": args.profile_workload.upper(),
            "profiled_cpu_ms": cpu * per_run, "threads": len(profiles),
            "total_tottime_ms": total * per_run,
            "own_tottime_ms": sum(r["tottime_ms"] for r in rows),
            "top_cumulative": sorted(rows, key=lambda r: -r["cumtime_ms"])[:args.profile_top],
            "top_tottime": sorted(rows, key=lambda r: -r["tottime_ms"])[:args.profile_top],
            "by_module": sorted(by_module.items(), key=lambda kv: -kv[1])[:25]}


WORKERS = {"w12": worker_w12, "w3": worker_w3, "cold": worker_cold, "profile": worker_profile}


def worker_main(args: argparse.Namespace) -> None:
    variant = VARIANTS[args.worker]()
    result = asyncio.run(WORKERS[args.task](variant, args))
    sys.stdout.write("\n@@RESULT@@" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown of the frameworks' threads (not a run's cost)


# -- the driver --------------------------------------------------------------------------


def _spawn(variant: str, task: str, args: argparse.Namespace, extra: tuple[str, ...] = (),
           sample_rss: bool = False) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--task", task,
               "--runs", str(args.runs), "--repeats", str(args.repeats),
               "--warmup", str(args.warmup), "--w3-runs", str(args.w3_runs),
               "--w3-latency", str(args.w3_latency), "--w3-repeats", str(args.w3_repeats),
               "--profile-top", str(args.profile_top),
               "--profile-workload", args.profile_workload,
               *(["--profile-out", os.path.abspath(args.profile_out)] if args.profile_out else []),
               *(["--same-text"] if args.same_text else []), *extra]
    env = dict(os.environ, PYTHONHASHSEED="0", TOKENIZERS_PARALLELISM="false")
    for key in ("LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LOGFIRE_TOKEN"):
        env.pop(key, None)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, text=True)
    peak_tree = [0, 0]  # bytes, processes
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            rss, count = tree_rss_bytes(process.pid)
            if rss > peak_tree[0]:
                peak_tree[:] = [rss, count]

    if sample_rss:
        threading.Thread(target=sample, daemon=True).start()
    try:
        out, err = process.communicate(timeout=args.worker_timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise RuntimeError(f"{variant} {task}: timed out after {args.worker_timeout} s") from None
    finally:
        stop.set()
    marker = out.rfind("@@RESULT@@")
    if process.returncode != 0 or marker < 0:
        raise RuntimeError(f"{variant} {task} failed (exit {process.returncode}):\n"
                           f"{out[-3000:]}\n{err[-3000:]}")
    result: dict[str, Any] = json.loads(out[marker + len("@@RESULT@@"):].strip())
    if sample_rss:
        result["peak_tree_rss_mb"] = peak_tree[0] / 2**20
        result["peak_tree_processes"] = peak_tree[1]
    return result


def import_seconds(statement: str, times: int = 5) -> dict[str, Any]:
    code = ("import time; started = time.perf_counter(); " + statement +
            "; print(time.perf_counter() - started)")
    samples = []
    for i in range(times + 1):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        if i:  # the first one warms the file cache
            samples.append(float(out.strip().splitlines()[-1]))
    return {"import_s": statistics.median(samples), "import_s_all": samples}


def versions() -> dict[str, str]:
    from importlib import metadata

    found = {"python": sys.version.split()[0]}
    for name in [*DISTRIBUTIONS.values(), *OTHER_DISTRIBUTIONS]:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def installed(framework: str) -> bool:
    from importlib import util

    return util.find_spec(MODULES[framework]) is not None


def select(spec: str) -> list[str]:
    """The variants ``spec`` names: frameworks (all their variants) or variants."""
    chosen: list[str] = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        matches = [k for k in VARIANTS if k == item or k.split(":")[0] == item]
        if not matches:
            raise SystemExit(f"unknown framework {item!r}; known: {', '.join(FRAMEWORKS)} "
                             f"or variants {', '.join(VARIANTS)}")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def _merge_w12(entry: dict[str, Any], new: dict[str, Any]) -> None:
    """Add one round's W1/W2 samples to ``entry``; medians over all of them."""
    old = entry.get("w12")
    if old is None:
        entry["w12"] = new
        return
    for workload in ("w1", "w2"):
        for key in [k for k in new[workload] if k.endswith("_all")]:
            values = old[workload][key] + new[workload][key]
            old[workload][key] = values
            old[workload][key[:-4]] = statistics.median(values)
    old["build_ms"] = statistics.median([old["build_ms"], new["build_ms"]])


def measure(selected: list[str], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for key in selected:
        variant = VARIANTS[key]()
        results[key] = {"name": variant.name, "concurrency": variant.concurrency,
                        "framework": variant.framework}
        print(f"... {variant.name}: {variant.description}", file=sys.stderr, flush=True)

    def attempt(entry: dict[str, Any], what: str, step: Any) -> None:
        if "error" in entry:
            return
        print(f"... {what} {entry['name']}", file=sys.stderr, flush=True)
        try:
            step()
        except RuntimeError as exc:
            print(f"!!! {entry['name']}: {exc}", file=sys.stderr)
            entry["error"] = str(exc)

    imports: dict[str, dict[str, Any]] = {}
    for round_index in range(args.rounds):
        shift = round_index % len(selected)
        for key in selected[shift:] + selected[:shift]:
            attempt(results[key], f"round {round_index + 1}/{args.rounds}: W1/W2",
                    lambda key=key: _merge_w12(results[key], _spawn(key, "w12", args)))
    for key in selected:
        entry = results[key]
        if not args.no_w3:
            def w3(key: str = key, entry: dict[str, Any] = entry) -> None:
                ideal = entry["w12"]["counts"]["w1"]["model_calls"]
                entry["w3"] = _spawn(key, "w3", args, ("--ideal-calls", str(ideal)),
                                     sample_rss=True)
            attempt(entry, "W3", w3)
        if not args.no_import:
            def startup(key: str = key, entry: dict[str, Any] = entry) -> None:
                if entry["framework"] not in imports:
                    imports[entry["framework"]] = import_seconds(VARIANTS[key]().imports)
                entry["import"] = imports[entry["framework"]]
                entry["cold"] = _spawn(key, "cold", args)
            attempt(entry, "import/cold", startup)
    return results


# -- the report --------------------------------------------------------------------------

#: (header, key, digits) of the main table
COLUMNS = [("W1 CPU ms/run", "w1_cpu", 2), ("W1 wall ms/run", "w1_wall", 2),
           ("W2 CPU ms/run", "w2_cpu", 2), ("W3 wall s", "w3_wall", 3), ("W3 CPU s", "w3_cpu", 2),
           ("W3 memory MB, all processes", "w3_memory", 0), ("import s", "import", 3)]
EXTRA = ["W2 wall ms/run", "W1 host/child CPU ms", "W3 processes", "W3 peak RSS MB, main",
         "W3 ideal s", "build ms", "cold s", "W1 model/tool/err", "W2 model/tool/err"]
#: the goals for dcbrain's default mode, against the peers of the same run
GOALS = "dcbrain:process"


def fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows]
    return "\n".join([line, sep, *body])


def values_of(entry: dict[str, Any]) -> dict[str, Any]:
    w12 = entry.get("w12", {})
    w1, w2, w3 = w12.get("w1", {}), w12.get("w2", {}), entry.get("w3", {})
    return {"w1_cpu": w1.get("cpu_ms"), "w1_wall": w1.get("wall_ms"),
            "w2_cpu": w2.get("cpu_ms"), "w3_wall": w3.get("wall_s"), "w3_cpu": w3.get("cpu_s"),
            "w3_memory": w3.get("peak_tree_rss_mb"),
            "import": entry.get("import", {}).get("import_s")}


def goals(values: dict[str, dict[str, Any]]) -> list[tuple[str, bool | None]]:
    """Each goal for dcbrain's default mode and whether this run met it (None: not
    measured); ``values`` by variant key, as ``values_of`` gives them."""
    mine = values.get(GOALS)
    peers = [v for k, v in values.items() if not k.startswith("dcbrain")]
    if mine is None or not peers:
        return []

    def against(column: str, pick: Any, limit: float, text: str) -> tuple[str, bool | None]:
        theirs = [p[column] for p in peers if p[column] is not None]
        if mine[column] is None or not theirs:
            return text + ": not measured", None
        ratio = mine[column] / pick(theirs)
        return f"{text}: {ratio:.2f}x", ratio <= limit

    return [against("w1_cpu", min, 0.8, "W1 CPU at most 0.8x the best peer's"),
            against("w2_cpu", min, 1.0, "W2 CPU at most 1.0x the best peer's"),
            against("w3_wall", min, 1.0, "W3 wall time the lowest (to the best peer)"),
            against("w3_memory", max, 1.0, "W3 memory at most the highest peer's")]


def render(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    values = {k: values_of(r) for k, r in results.items()}
    rows, extra_rows = [], []
    for key, r in results.items():
        v, w12, w3 = values[key], r.get("w12", {}), r.get("w3", {})
        name = r["name"] + (" [threads]" if r["concurrency"] == "threads" else "")
        rows.append([name] + [fmt(v[c], d) for _, c, d in COLUMNS])
        w1, counts = w12.get("w1", {}), w12.get("counts", {})
        calls = [f"{c['model_calls']}/{c['tool_execs']}/{c['tool_errors']}" if c else "-"
                 for c in (counts.get("w1"), counts.get("w2"))]
        extra_rows.append([name, fmt(w12.get("w2", {}).get("wall_ms")),
                           f"{fmt(w1.get('host_cpu_ms'))}/{fmt(w1.get('child_cpu_ms'))}"
                           if w1 else "-",
                           fmt(w3.get("peak_tree_processes")), fmt(w3.get("peak_rss_mb"), 0),
                           fmt(w3.get("ideal_wall_s")), fmt(w12.get("build_ms")),
                           fmt(r.get("cold", {}).get("cold_s"), 3), *calls])
    out = [table(["framework"] + [h for h, _, _ in COLUMNS], rows)]
    peers = [k for k in results if not k.startswith("dcbrain")]
    ratio_rows = []
    for key in [k for k in results if k.startswith("dcbrain")] if peers else []:
        cells = []
        for _, column, _digits in COLUMNS:
            mine = values[key][column]
            best = [(values[p][column], results[p]["name"]) for p in peers
                    if values[p][column] is not None]
            low, who = min(best) if best else (None, "")
            cells.append(f"{mine / low:.2f}x ({who})" if mine is not None and low else "-")
        ratio_rows.append([f"{results[key]['name']} / best peer", *cells])
    if ratio_rows:
        out += ["", "Ratio of dcbrain to the best (lowest) peer of this run in each column:",
                table(["ratio"] + [h for h, _, _ in COLUMNS], ratio_rows)]
    met = goals(values)
    if met:
        out += ["", f"Goals of {results[GOALS]['name']}:"]
        out += [f"- {text}: {'-' if ok is None else 'met' if ok else 'NOT met'}"
                for text, ok in met]
    out += ["", "Details:", table(["framework", *EXTRA], extra_rows)]
    spread = [[r["name"], *(" ".join(fmt(x) for x in r["w12"][w][k])
                            for w, k in (("w1", "cpu_ms_all"), ("w2", "cpu_ms_all"),
                                         ("w1", "wall_ms_all"))),
               " ".join(fmt(x, 3) for x in r.get("w3", {}).get("wall_s_all", [])) or "-"]
              for r in results.values() if r.get("w12")]
    if spread:
        out += ["", f"Per-repeat values (W1/W2: {args.rounds} round(s) x {args.repeats} x "
                    f"{args.runs} runs; W3: {args.w3_repeats} bursts):",
                table(["framework", "W1 CPU ms", "W2 CPU ms", "W1 wall ms", "W3 wall s"], spread)]
    return "\n".join(out)


def render_profile(profile: dict[str, Any], title: str) -> str:
    lines = [f"cProfile of {title}, {profile['workload']}, {profile['runs']} runs, all "
             f"{profile['threads']} threads merged; per run: "
             f"{profile['profiled_cpu_ms']:.2f} ms CPU profiled "
             f"({profile['total_tottime_ms']:.2f} ms of profiled function time, "
             f"{profile['own_tottime_ms']:.2f} ms of it in dcbrain's own code)", "",
             "Top dcbrain functions by cumulative time (ms per run, profiler overhead "
             "included):"]
    rows = [[str(i + 1), r["function"], fmt(r["cumtime_ms"], 3), fmt(r["tottime_ms"], 3),
             str(r["calls"])] for i, r in enumerate(profile["top_cumulative"])]
    lines.append(table(["#", "function", "cum ms/run", "own ms/run", "calls"], rows))
    lines += ["", "Top dcbrain functions by own time:"]
    rows = [[str(i + 1), r["function"], fmt(r["tottime_ms"], 3), str(r["calls"])]
            for i, r in enumerate(profile["top_tottime"])]
    lines.append(table(["#", "function", "own ms/run", "calls"], rows))
    lines += ["", "Own time by module / package (ms per run):"]
    lines.append(table(["module", "own ms/run"], [[k, fmt(v, 3)] for k, v in profile["by_module"]]))
    return "\n".join(lines)


def driver_main(args: argparse.Namespace) -> int:
    selected = select(args.frameworks)
    skipped = sorted({k.split(":")[0] for k in selected if not installed(k.split(":")[0])})
    selected = [k for k in selected if k.split(":")[0] not in skipped]
    found = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    print(f"machine: {os.cpu_count()} CPUs; {args.rounds} round(s) x {args.repeats} x "
          f"{args.runs} runs after {args.warmup} warm-up runs; W3: {args.w3_runs} runs x "
          f"{args.w3_latency} s per model call" +
          (f"; load average at start {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg")
           else ""))
    for name in skipped:
        print(f"skipped {name}: not installed")
    results = measure(selected, args) if selected else {}
    print()
    if hasattr(os, "getloadavg"):
        print(f"load average at the end: {os.getloadavg()[0]:.2f} (1 min)")
    done = {k: v for k, v in results.items() if "error" not in v}
    if done:
        print(render(done, args))
    failed = [v["name"] for v in results.values() if "error" in v]
    if failed:
        print("\nfailed: " + ", ".join(failed))
    profiles: dict[str, Any] = {}
    if args.profile:
        for key in [k for k in ("dcbrain:inprocess", "dcbrain:process") if k in selected]:
            print(f"... cProfile {key}", file=sys.stderr, flush=True)
            profiles[key] = _spawn(key, "profile", args)
            print()
            print(render_profile(profiles[key], VARIANTS[key]().name))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": found, "args": vars(args), "results": results,
                       "profiles": profiles}, f, indent=2)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                        help="comma-separated frameworks or variants (dcbrain:inprocess)")
    parser.add_argument("--runs", type=int, default=200, help="runs per repeat (W1, W2)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1,
                        help="passes of W1/W2 over all variants (rotated order)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--w3-runs", type=int, default=200)
    parser.add_argument("--w3-latency", type=float, default=0.05)
    parser.add_argument("--w3-repeats", type=int, default=3,
                        help="W3 bursts per variant (median; memory: the peak over all)")
    parser.add_argument("--same-text", action="store_true",
                        help="every run asks the same question (dcbrain: the same plan text)")
    parser.add_argument("--no-w3", action="store_true")
    parser.add_argument("--no-import", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile dcbrain's W1 and list its hotspots")
    parser.add_argument("--profile-top", type=int, default=15)
    parser.add_argument("--profile-workload", choices=("w1", "w2"), default="w1",
                        help="the workload --profile profiles")
    parser.add_argument("--profile-out", help="also write the merged cProfile stats to "
                        "PROFILE_OUT.dcbrain.<isolation>[.w2].pstats")
    parser.add_argument("--json", help="write every number to this file")
    parser.add_argument("--worker-timeout", type=float, default=900)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--ideal-calls", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    STATE.same_text = args.same_text
    if args.worker:
        worker_main(args)
    else:
        sys.exit(driver_main(args))


if __name__ == "__main__":
    main()
