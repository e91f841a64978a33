"""Start-up and Ctrl-C: the command line loads only what a command needs and stops quietly.

Ctrl-C is a real SIGINT sent to a real ``dcbrain`` process at moments where it is busy:
importing a tool file, waiting for a slow LLM, serving. It always ends with exit code
130 and no traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.fake_openai import FakeOpenAIServer
from support.server_app import PATIENCE_S, wait_until_listening

INTERRUPTED = 130


def environment() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), NO_COLOR="1",
                FAKE_API_KEY="sk-test")


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dcbrain.cli", *args], cwd=cwd,
                            env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def wait_until(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the process never got there"
        time.sleep(0.02)


def interrupt(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=PATIENCE_S)
    return process.returncode, stdout, stderr


def test_importing_the_command_line_loads_no_llm_sdk_nor_token_counting() -> None:
    probe = ("import sys, dcbrain.cli.app; "
             "print(sorted(m for m in ('openai', 'tiktoken', 'dcbrain.brain', "
             "'dcbrain.server.app', 'uvicorn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], env=environment(),
                          capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_configured_openai_model_imports_its_sdk_only_when_warmed_up_or_called() -> None:
    probe = ("import sys\n"
             "from dcbrain.llm import OpenAILLM\n"
             "llm = OpenAILLM('m', base_url='http://127.0.0.1:1/v1', api_key='none')\n"
             "print(sorted(m for m in ('openai', 'httpx') if m in sys.modules))\n"
             "llm.warm_up()\n"
             "print('openai' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=environment(),
                          capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True"]


def test_the_library_still_exports_every_public_name() -> None:
    import dcbrain
    import dcbrain.llm
    import dcbrain.server
    import dcbrain.tfplan

    for package in (dcbrain, dcbrain.llm, dcbrain.server, dcbrain.tfplan):
        missing = [name for name in package.__all__ if getattr(package, name, None) is None]
        assert missing == [], package.__name__
        assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError):
        _ = dcbrain.NoSuchName  # type: ignore[attr-defined]


def test_ctrl_c_while_loading_a_tool_file_exits_130_quietly(tmp_path: Path) -> None:
    (tmp_path / "plan.tf").write_text("print(1)\n")
    (tmp_path / "slow_tools.py").write_text(
        "import pathlib, time\npathlib.Path('loading').write_text('')\ntime.sleep(60)\n"
    )
    process = start(["plan", "run", "plan.tf", "--tools", "slow_tools.py"], tmp_path)
    wait_until((tmp_path / "loading").exists, process)
    code, stdout, stderr = interrupt(process)
    assert (code, stdout, stderr) == (INTERRUPTED, "", "")


class _ImportWatch:
    """A ``dcbrain`` process started with ``PYTHONPROFILEIMPORTTIME``: its stderr says each
    module it has imported, so a test can act at a moment of start-up the process reports
    (its own words, not a guessed delay)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "dcbrain.cli", *args], cwd=cwd,
                                        env=dict(environment(), PYTHONPROFILEIMPORTTIME="1"),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.imported: set[str] = set()
        self.other: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("import time:"):
                self.imported.add(line.rsplit("|", 1)[-1].strip())
            else:
                self.other.append(line)

    def interrupt_once(self, module: str) -> tuple[int, str]:
        wait_until(lambda: module in self.imported, self.process)
        self.process.send_signal(signal.SIGINT)
        self.process.communicate(timeout=PATIENCE_S)
        self.reader.join(PATIENCE_S)
        return self.process.returncode, "".join(self.other)


#: Moments of ``ask``'s start-up: loading the command line, reading the settings, building
#: the LLM clients, building the brain.
START_UP = ["dcbrain.cli", "dcbrain.config", "dcbrain.llm", "dcbrain.brain.planner"]


@pytest.mark.parametrize("moment", START_UP)
def test_ctrl_c_at_any_moment_of_ask_exits_130_without_a_traceback(
    tmp_path: Path, fake_openai: FakeOpenAIServer, moment: str
) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.slow(60, "never seen")
    code, stderr = _ImportWatch(["ask", "What is 6 times 7?", "--text"],
                                tmp_path).interrupt_once(moment)
    assert code == INTERRUPTED, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr


def test_ctrl_c_while_the_llm_is_answering_exits_130_at_once(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.slow(60, "never seen")
    process = start(["ask", "What is 6 times 7?", "--json"], tmp_path)
    wait_until(lambda: len(fake_openai.requests) > 0, process)
    started = time.monotonic()
    code, stdout, stderr = interrupt(process)
    assert (code, stdout, stderr) == (INTERRUPTED, "", "")
    assert time.monotonic() - started < PATIENCE_S / 2  # not after the 60 s reply


def test_ctrl_c_stops_serve_gracefully_with_130(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text('[llm.main]\nmodel = "m"\napi_key = "none"\n[memory]\npath = "s.db"\n')
    process = start(["serve", "--port", "0"], tmp_path)
    assert process.stderr is not None
    line = ""
    while "dcbrain serving on" not in line:
        line = process.stderr.readline()
        assert line or process.poll() is None, "serve ended before listening"
    url = line.split("dcbrain serving on ", 1)[1].split()[0].rstrip("/")
    wait_until_listening(process, url)  # uvicorn is up and listening
    code, _, stderr = interrupt(process)
    assert code == INTERRUPTED, stderr
    assert "Traceback" not in stderr
    assert "Application shutdown complete" in stderr


def write_config(tmp_path: Path, server: FakeOpenAIServer) -> None:
    (tmp_path / "dcbrain.toml").write_text(
        "[llm.main]\n"
        f'base_url = "{server.base_url}"\nmodel = "fake-model"\n'
        'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\ntimeout = 120\n'
        '[memory]\npath = ""\n'
    )


def test_the_help_names_the_config_file_the_loader_looks_for(tmp_path: Path) -> None:
    """The help texts spell the file name out (importing the loader would slow --help)."""
    from dcbrain.config import DEFAULT_CONFIG_FILE

    for command in (["ask", "--help"], ["serve", "--help"]):
        done = subprocess.run([sys.executable, "-m", "dcbrain.cli", *command], cwd=tmp_path,
                              env=environment(), capture_output=True, text=True,
                              timeout=PATIENCE_S)
        assert done.returncode == 0, done.stderr
        assert f"./{DEFAULT_CONFIG_FILE} if present" in " ".join(done.stdout.split())
