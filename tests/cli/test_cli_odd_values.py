"""Odd values at the CLI's edges: ints too long for decimal, NaN and infinities, lone
surrogates in dict keys, and terminal control sequences in what plans and tools return.

``--json`` output is always valid JSON (read here by a parser that refuses ``NaN``); text
for people never carries a control sequence from a plan, a tool or an LLM to the terminal.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.cli_runner import RunCLI
from support.fake_openai import FakeOpenAIServer

BIG = 10**5000

ODD_TOOLS = '''\
def big() -> int:
    """An int of 5001 digits."""
    return 10 ** 5000


def odd_floats() -> dict:
    """NaN and the infinities."""
    return {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def odd_keys() -> dict:
    """A lone surrogate as a key and as a value."""
    return {"\\ud800": "\\udc00", "ok": 1}


def hostile() -> str:
    """Text that writes the clipboard, retitles the window, clears the screen."""
    return ("\\x1b]52;c;aGVsbG8=\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m"
            "[bold red]markup[/] :thumbs_up: done")


def fails() -> str:
    """Fails with a message that clears the screen."""
    raise RuntimeError("\\x1b[2Jboom")
'''

#: What the terminal must never receive from a plan, a tool or an LLM.
RAW_CONTROLS = ("\x1b", "\x07", "\x9b")


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON proper: ``NaN`` and ``Infinity`` are refused."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def run_plan(tmp_path: Path, run_cli: RunCLI, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "odd.py").write_text(ODD_TOOLS, encoding="utf-8")
    (tmp_path / "p.tf").write_text(source, encoding="utf-8")
    return run_cli("plan", "run", "p.tf", "--tools", "odd.py", "--json")


def test_an_int_too_long_for_decimal_is_written_as_hex(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_plan(tmp_path, run_cli, "x = 10 ** 5000\nreturn [x, -x, {x: big()}]\n")
    assert done.returncode == 0, done.stderr
    value = strict_json(done.stdout)["value"]
    assert value == [hex(BIG), hex(-BIG), {hex(BIG): hex(BIG)}]
    assert int(value[0], 16) == BIG


def test_a_tool_result_int_too_long_for_decimal_is_written_as_hex(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    done = run_plan(tmp_path, run_cli, "n = big()\nreturn n % 1000\n")
    assert done.returncode == 0, done.stderr
    output = strict_json(done.stdout)
    assert output["value"] == 0
    assert output["trace"][0]["result"] == hex(BIG)


def test_nan_and_infinities_are_written_as_strings(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_plan(tmp_path, run_cli, "f = odd_floats()\nreturn [f, float('nan')]\n")
    assert done.returncode == 0, done.stderr
    output = strict_json(done.stdout)
    assert output["value"] == [{"nan": "nan", "inf": "inf", "-inf": "-inf"}, "nan"]
    assert output["trace"][0]["result"] == {"nan": "nan", "inf": "inf", "-inf": "-inf"}


def test_a_lone_surrogate_in_a_dict_key_is_replaced(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_plan(tmp_path, run_cli, "return [odd_keys(), {chr(0xDBFF): [chr(0xDC00)]}]\n")
    assert done.returncode == 0, done.stderr
    output = strict_json(done.stdout)
    assert output["value"] == [{"\ufffd": "\ufffd", "ok": 1}, {"\ufffd": ["\ufffd"]}]
    assert output["trace"][0]["result"] == {"\ufffd": "\ufffd", "ok": 1}


def test_an_odd_error_is_written_as_json_too(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_plan(tmp_path, run_cli, "n = big()\nf = odd_floats()\nprint(n)\n")
    assert done.returncode == 1
    output = strict_json(done.stdout)
    assert output["error"]["kind"] == "ValueError"
    assert output["trace"][1]["result"]["nan"] == "nan"


def test_plan_output_on_a_terminal_shows_control_characters_escaped(tmp_path: Path) -> None:
    (tmp_path / "odd.py").write_text(ODD_TOOLS, encoding="utf-8")
    (tmp_path / "p.tf").write_text("print('a\\x1b]0;pwned\\x07b\\tc')\nfails()\n",
                                   encoding="utf-8")
    controller, terminal = pty.openpty()
    environment = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    try:
        child = subprocess.run(
            [sys.executable, "-m", "dcbrain.cli", "plan", "run", "p.tf", "--tools", "odd.py"],
            cwd=tmp_path, env=environment, stdin=subprocess.DEVNULL, stdout=terminal,
            stderr=terminal, timeout=60)
    finally:
        os.close(terminal)
    try:
        shown = _read_all(controller)
    finally:
        os.close(controller)
    assert child.returncode == 1
    assert "a\\x1b]0;pwned\\x07b\tc" in shown
    assert "RuntimeError: fails() failed: \\x1b[2Jboom" in shown
    assert not any(control in shown for control in RAW_CONTROLS)


def test_plan_output_to_a_pipe_stays_verbatim(tmp_path: Path, run_cli: RunCLI) -> None:
    (tmp_path / "p.tf").write_text("print('a\\x1b[2Jb')\n", encoding="utf-8")
    done = run_cli("plan", "run", "p.tf")
    assert (done.returncode, done.stdout) == (0, "a\x1b[2Jb\n")


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


# -- dcbrain ask ------------------------------------------------------------------------


def write_config(tmp_path: Path, server: FakeOpenAIServer) -> None:
    (tmp_path / "odd.py").write_text(ODD_TOOLS, encoding="utf-8")
    (tmp_path / "dcbrain.toml").write_text(
        'tools = ["odd.py"]\n'
        f'[llm.main]\nbase_url = "{server.base_url}"\nmodel = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\n[memory]\npath = ""\n')


KEY = {"FAKE_API_KEY": "sk-test"}


def solved_run(server: FakeOpenAIServer, plan: str) -> None:
    server.reply(f"```tf_plan\n{plan}\n```")
    server.reply_json({"is_solved": True, "suggestion": ""})


def test_ask_shows_a_hostile_tool_result_escaped_and_never_as_markup(
    tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer
) -> None:
    write_config(tmp_path, fake_openai)
    solved_run(fake_openai, "text = hostile()\nreturn text")
    done = run_cli("ask", "Say something", "--text", env=KEY)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert not any(control in out for control in RAW_CONTROLS)
    answer = out.split("answer:\n", 1)[1]
    assert answer.startswith("\\x1b]52;c;aGVsbG8=\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m"
                             "[bold red]markup[/] :thumbs_up: done\n")
    assert "✓ tool hostile" in out and "\\x1b]52;c;" in out.split("✓ tool hostile", 1)[1]


def test_ask_json_holds_odd_values_as_valid_json(
    tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer
) -> None:
    write_config(tmp_path, fake_openai)
    solved_run(fake_openai, "return {'big': big(), 'floats': odd_floats(), 'keys': odd_keys()}")
    done = run_cli("ask", "Odd values", "--json", "--trace", "trace.jsonl", env=KEY)
    assert done.returncode == 0, done.stderr
    result = strict_json(done.stdout)
    assert result["final_result"] == {
        "big": hex(BIG), "floats": {"nan": "nan", "inf": "inf", "-inf": "-inf"},
        "keys": {"\ufffd": "\ufffd", "ok": 1},
    }
    events = [strict_json(line) for line in
              (tmp_path / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[-1]["type"] == "final"
    assert events[-1]["final_result"]["big"] == hex(BIG)
