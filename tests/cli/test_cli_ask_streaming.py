"""``dcbrain ask`` in a terminal shows the plan growing while a streaming planner writes it.

The real ``dcbrain`` process runs on a pseudo-terminal against the scripted
OpenAI-compatible server, which streams the plan at 40 tokens a second.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from dcbrain.llm.fake_server import ScriptedOpenAIServer

PLAN = ("```tf_plan\na = multiply(a=6, b=7)\nb = multiply(a=a, b=2)\n"
        "c = multiply(a=b, b=3)\nreturn c\n```")
TOOLS = 'def multiply(a: int, b: int) -> int:\n    """Multiply two numbers."""\n    return a * b\n'
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: One frame of the status line while the plan is written: up to the next spinner glyph.
FRAME = re.compile(r"writing the plan:(.*?)(?=[\u2800-\u28ff●]|\Z)", re.DOTALL)
#: Seconds without output after which the terminal is read no more (a wait, never a check).
PATIENCE_S = 60.0

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")


def run_in_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``dcbrain`` with a pseudo-terminal as its stdin/stdout/stderr: exit code, output."""
    primary, secondary = pty.openpty()
    env = {key: value for key, value in os.environ.items()
           if key not in ("OPENAI_API_KEY", "NO_COLOR")}
    env.update({"COLUMNS": "100", "LINES": "40", "TERM": "xterm", "PYTHONIOENCODING": "utf-8"})
    process = subprocess.Popen([sys.executable, "-m", "dcbrain.cli", *args], stdin=secondary,
                               stdout=secondary, stderr=secondary, cwd=cwd, env=env)
    os.close(secondary)
    output = b""
    try:
        while select.select([primary], [], [], PATIENCE_S)[0]:
            try:
                data = os.read(primary, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            output += data
    finally:
        os.close(primary)
        code = process.wait(timeout=PATIENCE_S)
    return code, ANSI.sub("", output.decode("utf-8", errors="replace"))


def test_ask_shows_the_plan_growing_under_the_status_line(tmp_path: Path) -> None:
    verdict = json.dumps({"is_solved": True, "suggestion": ""})
    with ScriptedOpenAIServer([PLAN, verdict], tokens_per_second=40) as server:
        (tmp_path / "tools.py").write_text(TOOLS)
        (tmp_path / "dcbrain.toml").write_text(
            f'tools = ["tools.py"]\n[llm.main]\nbase_url = "{server.base_url}"\n'
            'model = "scripted-model"\napi_key = "none"\nmax_retries = 0\n'
            '[memory]\npath = ""\n')
        code, screen = run_in_terminal(["ask", "What is 6 times 7 times 2 times 3?"],
                                       tmp_path)
        assert server.requests[0]["stream"] is True
    assert code == 0, screen
    assert "answer:" in screen and "252" in screen.split("answer:", 1)[1]
    # Frames of a plan half written: its first line there, its last not yet ...
    half_written = [frame.start() for frame in re.finditer(FRAME, screen)
                    if "a = multiply(a=6, b=7)" in frame.group(1)
                    and "return c" not in frame.group(1)]
    assert half_written, screen
    # ... before the whole plan is printed in its panel, its lines numbered.
    panel = re.search(r"│\s*4\s+return c", screen)
    assert panel is not None, screen
    assert half_written[0] < panel.start()
