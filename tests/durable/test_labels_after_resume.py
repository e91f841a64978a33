"""Provenance survives a crash: a durable run SIGKILLed mid-plan resumes from its journal,
and the untrusted value it had read still cannot reach a guarded argument."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from support.configs import write_tools_config
from support.durable_processes import free_port, start, stop, wait_healthy, wait_until
from support.fake_openai import FakeOpenAIServer, FakeResponse, RecordedRequest

TOOLS = '''\
import time
from pathlib import Path

MARKS = Path({marks!r})


def _mark(name):
    with (MARKS / name).open("a") as out:
        out.write("x\\n")


def read_bill() -> str:
    """The bill in the inbox (anyone can write one)."""
    _mark("read_bill")
    return "attacker-666"


def slow(x: int) -> int:
    """Think for a while."""
    _mark("slow.started")
    deadline = time.monotonic() + 60
    while not (MARKS / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)  # held until the test lets it go (after the crash)
    _mark("slow.finished")
    return x + 1


def send_money(recipient: str, amount: int) -> str:
    """Send money."""
    _mark("send_money")
    return f"sent {{amount}} to {{recipient}}"
'''

# A flow the static check cannot call certain (it depends on s), so the plan runs.
ATTACK = ('bill = read_bill()\ns = slow(x=1)\nto = bill if s > 0 else "alice"\n'
          'return send_money(recipient=to, amount=5)')


def marks(directory: Path, name: str) -> int:
    path = directory / "marks" / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_resumed_run_still_refuses_the_untrusted_value_it_read_before_the_crash(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    (tmp_path / "marks").mkdir()
    write_tools_config(tmp_path, fake_openai, TOOLS.format(marks=str(tmp_path / "marks")),
                       memory="brain.db", extra="[tool.read_bill]\nside_effects = false\n"
                       '[tool.send_money]\ntrusted_args = ["recipient"]\n')
    plans = iter([ATTACK, 'return "refused to pay"'])

    def handle(request: RecordedRequest) -> FakeResponse:
        if request.response_format is not None:
            content = json.dumps({"is_solved": True, "suggestion": ""})
        else:
            content = f"```tf_plan\n{next(plans)}\n```"
        body = json.dumps(fake_openai.completion(content, request=request)).encode()
        return FakeResponse(body=body, headers={"Content-Type": "application/json"})

    fake_openai.handler = handle
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    args = ["serve", "--config", str(tmp_path / "dcbrain.toml"), "--port", str(port)]
    log = tmp_path / "serve.log"
    first = start(args, log)
    try:
        wait_healthy(first, base_url, log)
        run_id = httpx.post(f"{base_url}/v1/conversations/c1/messages",
                            json={"content": "pay the bill"}).json()["run_id"]
        wait_until(lambda: marks(tmp_path, "slow.started") == 1, what="slow running")
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    assert marks(tmp_path, "read_bill") == 1 and marks(tmp_path, "slow.finished") == 0
    (tmp_path / "marks" / "release").write_text("")
    second = start(args, log)
    try:
        wait_healthy(second, base_url, log)
        wait_until(lambda: httpx.get(f"{base_url}/v1/runs/{run_id}").json()["status"]
                   not in ("queued", "running"), what="the resumed run's end")
        run = httpx.get(f"{base_url}/v1/runs/{run_id}").json()
        stream = httpx.get(f"{base_url}/v1/runs/{run_id}/events", timeout=30).text
    finally:
        stop(second)
    assert run["result"]["final_result"] == "refused to pay", run
    assert marks(tmp_path, "send_money") == 0
    assert marks(tmp_path, "read_bill") == 1  # answered by the journal after the crash
    assert '"type":"run_resumed"' in stream
    # refused at the call, or by the check before the resumed plan runs again: the
    # resumed run's planning has the journal's read in view, so its literals carry it
    refusal = next(line for line in stream.splitlines() if '"type":"policy_denied"' in line
                   or ('"error_kind":"CheckError"' in line and "tool:read_bill" in line))
    assert "tool:read_bill" in refusal and "attacker-666" not in refusal
