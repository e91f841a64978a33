"""What an idle cluster costs: CPU per process kind while no run is queued or executing.

    python benchmarks/idle.py [--seconds 60] [--workers 2]

Needs ``pip install -e ".[durable]"`` and Debian's PostgreSQL binaries (``initdb``).
Starts a private PostgreSQL, ``--workers`` ``dcbrain worker`` processes and one
``dcbrain serve --role api`` node (the LLM is a fake on loopback and is never asked), waits
until every process is ready and has settled, then reads each process's CPU time (user +
system, from ``/proc``) over ``--seconds`` and prints it as a share of one core
(goals: a worker <= 1 %, an API node <= 0.5 %).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from dcbrain.durable.testing import fresh_database, postgres_bindir, private_postgres  # noqa: E402
from support.durable_processes import (  # noqa: E402
    answer_every_run,
    free_port,
    start,
    stop,
    wait_for_line,
    wait_ready,
    write_config,
)
from support.fake_openai import FakeOpenAIServer  # noqa: E402

GOALS = {"worker": 1.0, "api": 0.5}
#: Seconds every process is left alone after it is ready, before the measure starts.
SETTLE_S = 5.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="how long the idle processes are measured (default 60)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    bindir = postgres_bindir()
    if bindir is None:
        print("PostgreSQL is not installed (apt-get install postgresql)")
        return 2
    with tempfile.TemporaryDirectory() as tmp, private_postgres(bindir) as server, \
            FakeOpenAIServer() as llm:
        directory = Path(tmp)
        answer_every_run(llm)
        config = write_config(directory, llm, delay_s=0.1)
        url = fresh_database(server)
        port = free_port()
        processes: dict[str, subprocess.Popen[bytes]] = {}
        logs: dict[str, Path] = {}
        try:
            for n in range(args.workers):
                name = f"worker-{n + 1}"
                logs[name] = directory / f"{name}.log"
                processes[name] = start(["worker", "--config", str(config), "--db", url,
                                         "--executor-id", name], logs[name])
            logs["api"] = directory / "api.log"
            processes["api"] = start(["serve", "--config", str(config), "--db", url,
                                      "--role", "api", "--port", str(port)], logs["api"])
            for name, process in processes.items():
                if name != "api":
                    wait_for_line(logs[name], "ready", process)
            wait_ready(processes["api"], f"http://127.0.0.1:{port}", logs["api"])
            time.sleep(SETTLE_S)
            before = {name: cpu_seconds(p.pid) for name, p in processes.items()}
            started = time.monotonic()
            time.sleep(args.seconds)
            elapsed = time.monotonic() - started
            after = {name: cpu_seconds(p.pid) for name, p in processes.items()}
        finally:
            for process in processes.values():
                stop(process)
    print(f"idle CPU over {elapsed:.1f} s (share of one core):")
    worst_ok = True
    for name in processes:
        kind = "api" if name == "api" else "worker"
        share = 100 * (after[name] - before[name]) / elapsed
        ok = share <= GOALS[kind]
        worst_ok &= ok
        print(f"  {name:10s} {after[name] - before[name]:6.2f} s CPU = {share:5.2f} % "
              f"(goal <= {GOALS[kind]:.1f} %{'' if ok else ', MISSED'})")
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
