"""``dcbrain plan check|run``: exit codes, problem lines, stdout fidelity, JSON, tools, limits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli_runner import RunCLI

TOOLS = '''\
from os.path import join as imported_join


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def shout(text: str) -> str:
    return text.upper() + "!"


def _private() -> int:
    return 1
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_check_valid_plan_exits_zero_and_prints_nothing(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "ok.tf", "x = [1, 2]\nprint(sum(x))\n")
    done = run_cli("plan", "check", "ok.tf")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_check_reports_every_problem_as_file_line_col(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "bad.tf", "x = 1\ny = undefined_name + 1\nlookup(q=x)\n")
    done = run_cli("plan", "check", "bad.tf")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("bad.tf:2:5: error: ")
    assert "undefined_name" in lines[0]
    assert lines[1].startswith("bad.tf:3:1: error: ")
    assert "lookup" in lines[1]


def test_check_reports_syntax_problems(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "imp.tf", "x = 1\nimport os\n")
    done = run_cli("plan", "check", "imp.tf")
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["imp.tf:2:1: error: import of 'os' is not allowed "
                                        "in tf_plan (only 'datetime', 'decimal', 'json', 'math')"]


def test_check_with_tools_knows_their_signatures(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "tools.py", TOOLS)
    write(tmp_path, "calls.tf", "a = add(a=1, b=2)\nb = add(a=1, c=2)\nimported_join(x=1)\n"
                                "z = shout(text='q')\n")
    done = run_cli("plan", "check", "calls.tf", "--tools", "tools.py")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "calls.tf:2:5: error: tool 'add' is missing required argument 'b'",
        "calls.tf:2:14: error: tool 'add' has no argument 'c' (expected: a, b)",
        "calls.tf:3:1: error: unknown function 'imported_join' (chains and tools: add, shout)",
    ]


def test_run_writes_print_output_exactly_as_cpython(tmp_path: Path, run_cli: RunCLI) -> None:
    source = (
        'print("a", 1, 2.5, None, True, sep="|", end="")\n'
        "print()\n"
        'print([1, "two", (3,)], {"k": [None]})\n'
        'print("unicode: héllo ✓")\n'
        "print(1 / 3, 10 ** 20, -0.0)\n"
        'print("no newline", end="")\n'
    )
    plan = write(tmp_path, "p.tf", source)
    expected = subprocess.run([sys.executable, str(plan)], capture_output=True, text=True,
                              encoding="utf-8", check=True).stdout
    done = run_cli("plan", "run", "p.tf")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == expected


def test_run_error_keeps_output_and_reports_position(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "fail.tf", 'print("before")\nd = {}\nx = d["missing"]\nprint("after")\n')
    done = run_cli("plan", "run", "fail.tf")
    assert done.returncode == 1
    assert done.stdout == "before\n"
    assert done.stderr.splitlines() == ["fail.tf:3:5: KeyError: 'missing'"]


def test_run_reports_check_problems_before_running(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "c.tf", 'print("never")\nmissing_tool(x=1)\n')
    done = run_cli("plan", "run", "c.tf")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("c.tf:2:1: CheckError: ")


def test_run_json_prints_the_console_result(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "tools.py", TOOLS)
    write(tmp_path, "j.tf",
          'print("hi")\nn = add(a=2, b=3)\nreturn {"n": n, "s": shout(text="x")}\n')
    done = run_cli("plan", "run", "j.tf", "--tools", "tools.py", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["value"] == {"n": 5, "s": "X!"}
    assert result["stdout"] == "hi\n"
    assert [call["name"] for call in result["trace"]] == ["add", "shout"]
    assert result["trace"][0]["result"] == 5


def test_run_json_error_object(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "e.tf", 'print("partial")\nx = 1 // 0\n')
    done = run_cli("plan", "run", "e.tf", "--json")
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["error"]["kind"] == "ZeroDivisionError"
    assert (payload["error"]["line"], payload["error"]["col"]) == (2, 5)
    assert payload["error"]["message"]
    assert payload["stdout"] == "partial\n"


def test_run_limit_override_is_applied(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "tools.py", TOOLS)
    write(tmp_path, "calls.tf", "for i in range(3):\n    add(a=i, b=i)\n")
    assert run_cli("plan", "run", "calls.tf", "--tools", "tools.py").returncode == 0
    done = run_cli("plan", "run", "calls.tf", "--tools", "tools.py", "--limit", "max_calls=2")
    assert done.returncode == 1
    assert done.stderr.startswith("calls.tf:2:5: CallLimitExceeded: ")


def test_run_bad_limits_are_usage_errors(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "p.tf", "print(1)\n")
    unknown = run_cli("plan", "run", "p.tf", "--limit", "max_bananas=3")
    assert unknown.returncode == 2
    assert "unknown limit 'max_bananas'" in unknown.stderr
    assert "max_operations" in unknown.stderr
    not_number = run_cli("plan", "run", "p.tf", "--limit", "max_calls=lots")
    assert not_number.returncode == 2
    assert "max_calls expects a number" in not_number.stderr
    no_equals = run_cli("plan", "run", "p.tf", "--limit", "max_calls")
    assert no_equals.returncode == 2
    assert "NAME=VALUE" in no_equals.stderr


def test_missing_files_are_usage_errors(tmp_path: Path, run_cli: RunCLI) -> None:
    write(tmp_path, "p.tf", "print(1)\n")
    assert run_cli("plan", "run", "nope.tf").returncode == 2
    done = run_cli("plan", "run", "p.tf", "--tools", "nope.py")
    assert done.returncode == 2
    assert "nope.py" in done.stderr


@pytest.mark.parametrize(("command", "tools", "source", "message"), [
    # a tools file that fails to import
    ("check", "raise RuntimeError('boom')\n", "print(1)\n", "RuntimeError: boom"),
    # a tool named like a builtin
    ("run", "def max(values: list[int]) -> int:\n    return 0\n", "print(max([1, 2]))\n",
     "tools.py: function 'max' clashes with the tf_plan builtin max"),
], ids=["fails-to-import", "named-like-a-builtin"])
def test_a_tools_file_that_cannot_be_used_is_a_usage_error(
    tmp_path: Path, run_cli: RunCLI, command: str, tools: str, source: str, message: str
) -> None:
    write(tmp_path, "tools.py", tools)
    write(tmp_path, "p.tf", source)
    done = run_cli("plan", command, "p.tf", "--tools", "tools.py")
    assert done.returncode == 2
    assert message in done.stderr


def test_a_plan_printing_a_lone_surrogate_is_written_with_a_replacement_character(
    tmp_path: Path, run_cli: RunCLI
) -> None:
    write(tmp_path, "odd.tf", "text = 'a' + chr(55296) + 'b'\nprint(text)\nreturn text\n")
    plain = run_cli("plan", "run", "odd.tf")
    as_json = run_cli("plan", "run", "odd.tf", "--json")
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "a\ufffdb\n", "")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["value"] == "a\ufffdb"
