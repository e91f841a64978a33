"""A durable run SIGKILLed during eager execution resumes with the journal keys of a run
without it, on SQLite and PostgreSQL.

The planner streams its plan; its first statements call a read-only tool, its last one a
consequential tool. The read-only call of ``key="y"`` blocks until the test opens a gate
(a file), so the process is killed while that early call runs: while the plan is still
being written (the planner's stream is held after that statement), or once the whole
plan was written and its run waits for the early call.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dcbrain.llm.fake_server import ScriptedOpenAIServer, ScriptedReply
from support.configs import write_tools_config
from support.durable_processes import (
    free_port,
    read_run,
    send_message,
    start,
    stop,
    wait_healthy,
    wait_until,
)

TOOLS = '''\
import os
import time
from pathlib import Path

MARKS = Path({marks!r})


def _mark(name):
    with (MARKS / name).open("a") as out:
        out.write(f"{{os.getpid()}}\\n")


def lookup(key: str) -> str:
    """Look a key up."""
    _mark(f"lookup.{{key}}")
    while key == "y" and not (MARKS / "gate").exists():  # the test opens the gate
        time.sleep(0.02)
    return key.upper()


def send(text: str) -> str:
    """Send a text."""
    _mark("send")
    return f"sent {{text}}"
'''

PLAN = 'a = lookup(key="x")\nb = lookup(key="y")\nc = a + b\nreturn send(text=c)'
HELD_AFTER = 'b = lookup(key="y")\n'
#: How long a held stream waits before it goes on anyway (the test fails then).
HOLD_S = 60.0


class Planner(ScriptedOpenAIServer):
    """Streams the plan to every planning request and "solved" to every validation;
    with ``hold`` set, the first plan's stream is held after :data:`HELD_AFTER` until
    ``go`` is set. ``written`` is set once a plan's last token was sent."""

    def __init__(self, *, hold: bool) -> None:
        super().__init__([], tokens_per_second=200)
        self.hold = hold
        self.go = threading.Event()
        self.written = threading.Event()
        self.plans = 0

    def _next(self, body: dict[str, Any]) -> ScriptedReply | None:
        with self._lock:
            self.requests.append(body)
            if body.get("response_format") is not None:
                return ScriptedReply(content=json.dumps({"is_solved": True, "suggestion": ""}))
            self.plans += 1
            return ScriptedReply(content=f"Here is my plan.\n```tf_plan\n{PLAN}\n```")

    def _chunks(self, reply: ScriptedReply, body: dict[str, Any]
                ) -> Iterable[dict[str, Any] | None]:
        held = not self.hold or body.get("response_format") is not None or self.plans > 1
        written = ""
        for chunk in super()._chunks(reply, body):
            if chunk is not None and chunk.get("choices"):
                written += chunk["choices"][0]["delta"].get("content") or ""
                if chunk["choices"][0]["finish_reason"] is not None and "tf_plan" in written:
                    self.written.set()
            yield chunk
            if not held and HELD_AFTER in written:
                held = True
                self.go.wait(HOLD_S)


def marks(directory: Path, name: str) -> int:
    path = directory / "marks" / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def journal_keys(directory: Path, db: str | None, run_id: str) -> list[str]:
    """The run's journal keys, in the order they were recorded."""
    if db is None:
        with sqlite3.connect(directory / "brain.db-journal.sqlite") as conn:
            rows = conn.execute("SELECT key FROM dcbrain_journal WHERE run_id = ? "
                                "ORDER BY rowid", (run_id,)).fetchall()
    else:
        import psycopg

        with psycopg.connect(db) as conn:
            rows = conn.execute("SELECT key FROM dcbrain_journal WHERE run_id = %s "
                                "ORDER BY position", (run_id,)).fetchall()
    return [row[0] for row in rows]


def wait_for_call(base_url: str, run_id: str, name: str, nth: int) -> None:
    """Read the run's stored events until the ``nth`` start of a call of ``name``."""
    seen = 0
    with httpx.stream("GET", f"{base_url}/v1/runs/{run_id}/events", timeout=60) as response:
        for line in response.iter_lines():
            if (line.startswith("data: ") and '"call_started"' in line
                    and json.loads(line[len("data: "):]).get("name") == name):
                seen += 1
                if seen == nth:
                    return
    raise AssertionError(f"the run ended before call {nth} of {name} started")


class Node:
    """One directory's config and ``dcbrain serve`` processes, one at a time."""

    def __init__(self, directory: Path, planner: Planner, db: str | None, *,
                 eager: bool) -> None:
        directory.mkdir()
        (directory / "marks").mkdir()
        write_tools_config(directory, planner, TOOLS.format(marks=str(directory / "marks")),
                           memory="brain.db", extra=f"[brain]\neager = {str(eager).lower()}\n"
                           "[tool.lookup]\nside_effects = false\n")
        self.directory, self.db = directory, db
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: Any = None

    def serve(self) -> None:
        args = ["serve", "--config", str(self.directory / "dcbrain.toml"),
                "--port", str(self.port), *(["--db", self.db] if self.db else [])]
        log = self.directory / "serve.log"
        self.process = start(args, log)
        wait_healthy(self.process, self.base_url, log)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self) -> None:
        if self.process is not None:
            stop(self.process)

    def send(self) -> str:
        return send_message(self.base_url, "c1", "look x and y up and send them")

    def run(self, run_id: str) -> dict[str, Any]:
        return read_run(self.base_url, run_id)

    def wait_ended(self, run_id: str) -> dict[str, Any]:
        wait_until(lambda: self.run(run_id)["status"] not in ("queued", "running"),
                   timeout_s=120, what="the run's end")
        return self.run(run_id)

    def stream(self, run_id: str) -> str:
        return httpx.get(f"{self.base_url}/v1/runs/{run_id}/events", timeout=30).text


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest) -> Iterator[str | None]:
    yield None if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def plain_run(directory: Path, db: str | None) -> tuple[dict[str, Any], list[str]]:
    """The same run, without eager execution and without a kill."""
    with Planner(hold=False) as planner:
        node = Node(directory, planner, db, eager=False)
        (directory / "marks" / "gate").touch()
        try:
            node.serve()
            run_id = node.send()
            run = node.wait_ended(run_id)
        finally:
            node.close()
    return run, journal_keys(directory, db, run_id)


@pytest.mark.parametrize("killed", ["while the plan is written", "once the plan is written"])
def test_a_run_killed_during_eager_execution_resumes_with_the_same_journal_keys(
    tmp_path: Path, db: str | None, killed: str
) -> None:
    writing = killed == "while the plan is written"
    directory = tmp_path / "eager"
    with Planner(hold=writing) as planner:
        node = Node(directory, planner, db, eager=True)
        try:
            node.serve()
            run_id = node.send()
            if writing:  # the early call of y runs; the rest of the plan is not written
                wait_until(lambda: marks(directory, "lookup.y") == 1, what="lookup(y) early")
                assert not planner.written.is_set()
            else:  # the whole plan was written; its run waits for the early call of y
                wait_until(lambda: marks(directory, "lookup.y") == 1, what="lookup(y) early")
                wait_for_call(node.base_url, run_id, "lookup", 2)
                assert planner.written.is_set()
            node.kill()
            planner.go.set()
            assert marks(directory, "send") == 0
            plans_before = planner.plans
            (directory / "marks" / "gate").touch()
            node.serve()
            run = node.wait_ended(run_id)
            stream = node.stream(run_id)
        finally:
            node.close()
        plans_after = planner.plans
    keys = journal_keys(directory, db, run_id)
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", "sent XY"), run
    assert '"type":"run_resumed"' in stream.replace(" ", "")
    assert marks(directory, "send") == 1
    # lookup(y) was cut off by the kill and ran again; lookup(x) ran early, and once
    # the whole plan had taken its result the journal answered it after the crash
    assert marks(directory, "lookup.y") == 2
    assert marks(directory, "lookup.x") == (2 if writing else 1)
    # killed while writing, the reply was cut: the resumed run asks again; once written,
    # the reply is the journal's
    assert (plans_before, plans_after) == ((1, 2) if writing else (1, 1))
    plain, plain_keys = plain_run(tmp_path / "plain", db)
    assert plain["result"]["final_result"] == "sent XY"
    assert any("send" in key for key in keys) and any("lookup" in key for key in keys)
    assert keys == plain_keys
