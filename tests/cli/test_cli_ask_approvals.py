"""``dcbrain ask`` and calls that need approval: asked y/n on a terminal (a real
pseudo-terminal), answered by ``--approve-all``/``--deny-all`` in scripts."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from support.cli_runner import RunCLI, ask_solved
from support.fake_openai import FakeOpenAIServer

TOOLS = '''\
from pathlib import Path

def send_mail(to: str, body: str) -> str:
    """Send an email."""
    with Path("sent.txt").open("a") as out:
        out.write(f"{to}\\n")
    return f"sent to {to}"
'''

FIRST = "```tf_plan\nreturn send_mail(to=\"all@example.org\", body=\"hi\")\n```"
SECOND = "```tf_plan\nreturn send_mail(to=\"team@example.org\", body=\"hi\")\n```"
KEY = {"FAKE_API_KEY": "sk-test"}


def write_config(tmp_path: Path, server: FakeOpenAIServer) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "dcbrain.toml").write_text(
        'tools = ["tools.py"]\n'
        f'[llm.main]\nbase_url = "{server.base_url}"\nmodel = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\n[memory]\npath = ""\n'
        "[tool.send_mail]\nrequires_approval = true\n")


def sent(tmp_path: Path) -> list[str]:
    path = tmp_path / "sent.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_terminal_answers_n_with_a_reason_then_y(tmp_path: Path,
                                                  fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply(FIRST)
    fake_openai.reply(SECOND)
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    controller, terminal = pty.openpty()
    environment = {**os.environ, **KEY, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8",
                   "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "120"}
    child = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "ask", "mail everyone", "--text"],
        cwd=tmp_path, env=environment, stdin=terminal, stdout=terminal, stderr=terminal)
    os.close(terminal)
    shown = ""
    try:
        shown += read_until(controller, "Run this call?", child)
        assert "send_mail" in shown and "all@example.org" in shown and "line 1" in shown
        os.write(controller, b"n\r")
        shown += read_until(controller, "Reason", child)
        os.write(controller, b"wrong list\r")
        shown += read_until(controller, "Run this call?", child)
        assert "team@example.org" in shown.split("wrong list")[-1]
        os.write(controller, b"y\r")
        shown += read_until(controller, None, child)
        assert child.wait(60) == 0, shown
    finally:
        if child.poll() is None:
            child.kill()
        os.close(controller)
    assert sent(tmp_path) == ["team@example.org"]
    assert "denied by the user: wrong list" in json.dumps(fake_openai.requests[1].messages)
    assert "sent to team@example.org" in shown


def test_scripts_approve_or_deny_every_call(tmp_path: Path, run_cli: RunCLI,
                                            fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    done = ask_solved(run_cli, fake_openai, FIRST, "mail everyone", "--json", "--approve-all")
    assert json.loads(done.stdout)["final_result"] == "sent to all@example.org"
    assert "approved by --approve-all" in done.stderr
    fake_openai.reply(FIRST)
    fake_openai.reply("I could not send it.")
    done = run_cli("ask", "mail everyone", "--json", "--deny-all", env=KEY)
    assert json.loads(done.stdout)["final_result"] == "I could not send it."
    assert sent(tmp_path) == ["all@example.org"]  # only the approved run sent
    assert run_cli("ask", "x", "--approve-all", "--deny-all", env=KEY).returncode == 2


def test_without_a_terminal_or_a_flag_such_calls_are_denied(
    tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer
) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply(FIRST)
    fake_openai.reply("Nobody could approve the email.")
    done = run_cli("ask", "mail everyone", "--json", env=KEY)
    assert json.loads(done.stdout)["final_result"] == "Nobody could approve the email."
    assert "no terminal" in json.dumps(fake_openai.requests[1].messages)
    assert sent(tmp_path) == []


def read_until(fd: int, text: str | None, child: subprocess.Popen[bytes],
               timeout_s: float = 60) -> str:
    """What the terminal shows until ``text`` (or until the child closed it)."""
    deadline = time.monotonic() + timeout_s
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            if child.poll() is not None and text is not None:
                break
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if text is not None and text in seen.decode("utf-8", "replace"):
            return seen.decode("utf-8", "replace")
    shown = seen.decode("utf-8", "replace")
    assert text is None, f"{text!r} not shown in time:\n{shown}"
    return shown
