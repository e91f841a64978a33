"""SIGTERM drains ``dcbrain serve``: real processes, real signals, runs in flight, SSE readers.

The server keeps listening while it drains: a new message gets ``503`` with ``Retry-After``,
a run that ends within ``--drain-timeout`` ends as it would have, a longer one is given up —
``interrupted`` when runs execute in this process, resumed at the next start when they are
durable — and every reader of a run that ended gets its ``final`` event and ``end``.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from dcbrain import SQLiteMemory
from support.drain_processes import (
    StreamReader,
    exits_within,
    nap_server,
    naps,
    post,
)
from support.durable_processes import start, stop, wait_healthy, wait_until
from support.fake_openai import FakeOpenAIServer

DRAIN_S = 4.0
#: Beyond the drain timeout: the shutdown of uvicorn and of the runs (generous: a busy machine).
EXIT_MARGIN_S = 15.0
SHORT, LONG = 2.0, 120.0


def _without_dbos(tmp_path: Path) -> str:
    """A directory whose ``dbos`` cannot be imported, as after ``pip install --no-deps``:
    the server then runs its runs in its own process (not durable)."""
    shadow = tmp_path / "no-dbos"
    shadow.mkdir()
    (shadow / "dbos.py").write_text('raise ImportError("No module named \'dbos\'")\n')
    return str(shadow)


def _serve(tmp_path: Path, config: Path, port: int, log: Path,
           durable: bool) -> subprocess.Popen[bytes]:
    args = ["serve", "--config", str(config), "--port", str(port),
            "--drain-timeout", str(DRAIN_S)]
    return start(args, log, extra_path=None if durable else _without_dbos(tmp_path))


def _two_runs_in_flight(tmp_path: Path, base_url: str) -> tuple[str, str]:
    short = post(base_url, "short", f"nap {SHORT}").json()["run_id"]
    long = post(base_url, "long", f"nap {LONG}").json()["run_id"]
    wait_until(lambda: naps(tmp_path, "started") == 2, what="both naps running")
    return short, long


@pytest.mark.parametrize("durable", [False, True], ids=["in-process", "durable-sqlite"])
def test_sigterm_lets_short_runs_finish_refuses_new_ones_and_tells_every_reader(
    tmp_path: Path, fake_openai: FakeOpenAIServer, durable: bool
) -> None:
    config, port, base_url = nap_server(tmp_path, fake_openai)
    log = tmp_path / "serve.log"
    process = _serve(tmp_path, config, port, log, durable)
    try:
        wait_healthy(process, base_url, log)
        short, long = _two_runs_in_flight(tmp_path, base_url)
        readers = {run_id: StreamReader(base_url, run_id) for run_id in (short, long)}
        process.send_signal(signal.SIGTERM)
        wait_until(lambda: httpx.get(f"{base_url}/v1/health").json()["draining"],
                   what="the server draining")
        refused = post(base_url, "late", "nap 1")
        took_s = exits_within(process, DRAIN_S + EXIT_MARGIN_S)
        for reader in readers.values():
            reader.join()
    finally:
        stop(process)
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"] == "draining"
    assert refused.headers["Retry-After"].isdigit()
    assert took_s < DRAIN_S + EXIT_MARGIN_S
    # The short run finished in the drain; its reader got its final event, then `end`.
    assert readers[short].final is not None and readers[short].final["status"] == "succeeded"
    assert readers[short].end == {"run_id": short, "status": "succeeded"}
    assert naps(tmp_path, "finished", SHORT) == 1
    assert naps(tmp_path, "started", 1.0) == 0  # the refused message never ran
    if durable:  # given up, not ended: the stream closes without an end, to be resumed
        assert readers[long].end is None
    else:
        final = readers[long].final
        assert final is not None and (final["status"], final["reason"]) == (
            "interrupted", "server_shutdown")
        assert readers[long].end == {"run_id": long, "status": "interrupted"}
        stored = SQLiteMemory(tmp_path / "brain.db")
        try:
            record = stored.get_run(long)
        finally:
            stored.close()
        assert record is not None and record.status == "interrupted"
    text = log.read_text()
    assert "draining: new runs are refused; 2 run(s) in flight" in text
    assert f"drain timeout: 1 run(s) given up ({long})" in text


def test_a_durable_run_given_up_at_the_drain_timeout_resumes_and_finishes_after_a_restart(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    config, port, base_url = nap_server(tmp_path, fake_openai)
    log = tmp_path / "serve.log"
    first = _serve(tmp_path, config, port, log, durable=True)
    try:
        wait_healthy(first, base_url, log)
        run_id = post(base_url, "c", "nap 6").json()["run_id"]
        wait_until(lambda: naps(tmp_path, "started") == 1, what="the nap running")
        first.send_signal(signal.SIGTERM)
        exits_within(first, DRAIN_S + EXIT_MARGIN_S)
    finally:
        stop(first)
    assert naps(tmp_path, "finished") == 0  # the drain timeout (4 s) cut the 6 s nap off
    second = _serve(tmp_path, config, port, log, durable=True)
    try:
        wait_healthy(second, base_url, log)
        reader = StreamReader(base_url, run_id).join(60)
    finally:
        stop(second)
    assert reader.end == {"run_id": run_id, "status": "succeeded"}
    assert naps(tmp_path, "finished") == 1
