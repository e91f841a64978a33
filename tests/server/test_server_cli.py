"""``dcbrain serve --config F``: the real command, its brain on an OpenAI-compatible server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from dcbrain.cli.serve import is_loopback
from dcbrain.llm.local import local_model_available
from support.configs import write_tools_config
from support.durable_processes import free_port
from support.fake_openai import FakeOpenAIServer
from support.server_app import PATIENCE_S, Api, wait_until_listening

TOOLS = '''\
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b
'''


def test_serve_answers_over_http_with_the_configured_brain(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = write_tools_config(tmp_path, fake_openai, TOOLS, memory="brain.db")
    fake_openai.reply("```tf_plan\nreturn multiply(a=6, b=7)\n```", usage=(120, 20))
    fake_openai.reply_json({"is_solved": True, "suggestion": ""}, usage=(80, 10))
    port = free_port()
    env = dict(os.environ, FAKE_API_KEY="sk-test", DCBRAIN_API_TOKEN="t0ken",
               PYTHONPATH=os.pathsep.join(sys.path))
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--config", str(config),
         "--port", str(port), "--list-conversations"],
        env=env, stderr=subprocess.PIPE, text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_listening(process, base_url)
        refused = httpx.get(base_url + "/v1/conversations")
        api = Api(base_url, token="t0ken")
        run_id = api.send("c-42", "What is 6 times 7?")
        run = api.wait_for(run_id)
        messages = api.http.get("/v1/conversations/c-42").json()["messages"]
        listing = api.http.get("/v1/conversations").json()["conversations"]
        page = api.http.get("/")
        api.http.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=PATIENCE_S)

    assert refused.status_code == 401  # DCBRAIN_API_TOKEN is honoured
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 42)
    assert [m["content"] for m in messages] == ["What is 6 times 7?", "42"]
    assert messages[1]["run_id"] == run_id
    assert [c["conversation_id"] for c in listing] == ["c-42"]  # --list-conversations
    assert page.status_code == 200 and "dcbrain" in page.text
    assert f"dcbrain serving on http://127.0.0.1:{port}/" in stderr
    assert "Application shutdown complete" in stderr  # SIGTERM shuts down gracefully
    assert process.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught
    assert (tmp_path / "brain.db").exists()


def _serve_with(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    """``dcbrain serve`` on a config of this text, run until it exits."""
    bad = tmp_path / "bad.toml"
    bad.write_text(config)
    return subprocess.run(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--config", str(bad)],
        capture_output=True, text=True, timeout=PATIENCE_S,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )


def test_serve_with_a_broken_config_exits_2(tmp_path: Path) -> None:
    done = _serve_with(tmp_path, "[brain]\nmax_tokens = -5\n")
    assert done.returncode == 2
    assert "brain.max_tokens" in done.stderr


def test_serve_without_a_config_file_falls_back_to_the_embedded_model_like_ask(
    tmp_path: Path,
) -> None:
    """A fresh machine: no dcbrain.toml, no --config. ``serve`` takes the path ``ask`` takes."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DCBRAIN_API_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--port", str(port)],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        if local_model_available():
            wait_until_listening(process, base_url)
            listing = httpx.get(base_url + "/v1/conversations")
        else:
            process.wait(timeout=PATIENCE_S)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=PATIENCE_S)
    assert "file not found" not in stderr
    if local_model_available():
        assert f"dcbrain serving on http://127.0.0.1:{port}/" in stderr
        assert (tmp_path / "dcbrain.db").exists()  # the default memory, next to where it runs
        assert listing.status_code == 404  # listing is opt-in
    else:
        assert process.returncode == 2
        assert "the embedded local model is used, but" in stderr


def test_serve_with_a_chain_that_cannot_be_built_exits_2_naming_its_key(tmp_path: Path) -> None:
    done = _serve_with(tmp_path, '[llm.main]\nmodel = "m"\napi_key = "none"\n'
                       '[chains.summarize]\nprompt = "Summarize: {{ text "\n')
    assert done.returncode == 2
    assert "chains.summarize.prompt: prompt template has a Jinja2 syntax error" in done.stderr
    assert "Traceback" not in done.stderr


def test_only_loopback_addresses_count_as_local() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "example.org")] == [False] * 3


def serve_command(*args: str, cwd: Path, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "DCBRAIN_API_TOKEN"}
    environment["PYTHONPATH"] = os.pathsep.join(sys.path)
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "dcbrain.cli", "serve", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=PATIENCE_S, env=environment)


OFFLINE_CONFIG = '[llm.main]\nmodel = "m"\napi_key = "none"\n[memory]\npath = "s.db"\n'


def test_serve_on_a_port_in_use_fails_clearly_before_announcing_a_url(tmp_path: Path) -> None:
    (tmp_path / "dcbrain.toml").write_text(OFFLINE_CONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_command("--port", str(port), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"error: port {port} on 127.0.0.1 is already in use (another dcbrain "
                           "serve?); stop that process or choose another port with --port\n")
    assert not (tmp_path / "s.db").exists()  # nothing was built


def test_serve_refuses_an_open_address_without_a_token(tmp_path: Path) -> None:
    (tmp_path / "dcbrain.toml").write_text(OFFLINE_CONFIG)
    done = serve_command("--host", "0.0.0.0", "--port", str(free_port()), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: refusing to serve on 0.0.0.0 without "
                                  "DCBRAIN_API_TOKEN")
    assert "--insecure-no-token" in done.stderr
    assert "dcbrain serving on" not in done.stderr


def test_serve_on_an_open_address_with_insecure_no_token_warns_and_listens(
    tmp_path: Path,
) -> None:
    (tmp_path / "dcbrain.toml").write_text(OFFLINE_CONFIG)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DCBRAIN_API_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
         "--insecure-no-token"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_listening(process, f"http://127.0.0.1:{port}", patience_s=120)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=PATIENCE_S)
    assert "warning: serving on 0.0.0.0 without DCBRAIN_API_TOKEN (--insecure-no-token)" in stderr
    assert f"dcbrain serving on http://0.0.0.0:{port}/" in stderr
    assert process.returncode == 130


def _start_message(tmp_path: Path, fake_openai: FakeOpenAIServer,
                   extra_path: str | None = None) -> str:
    """What ``dcbrain serve`` writes to stderr until it serves (then it is stopped)."""
    config = tmp_path / "dcbrain.toml"
    config.write_text(f'[llm.main]\nbase_url = "{fake_openai.base_url}"\nmodel = "m"\n'
                      'api_key = "none"\n[memory]\npath = "brain.db"\n')
    port = free_port()
    paths = [extra_path] if extra_path else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, *sys.path]))
    env.pop("DCBRAIN_API_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--config", str(config),
         "--port", str(port)], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_listening(process, f"http://127.0.0.1:{port}", patience_s=120)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=PATIENCE_S)
    return stderr


def test_serve_says_at_start_that_runs_survive_a_crash(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    stderr = _start_message(tmp_path, fake_openai)
    assert ("runs survive a crash: each run is a durable workflow in SQLite files beside the "
            "store; a restarted server resumes the runs it was executing\n") in stderr
    assert (tmp_path / "brain.db-dbos.sqlite").exists()


def test_serve_says_at_start_why_runs_do_not_survive_a_crash_without_dbos(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    # A Python where DBOS cannot be imported, as after `pip install --no-deps`.
    shadow = tmp_path / "no-dbos"
    shadow.mkdir()
    (shadow / "dbos.py").write_text('raise ImportError("No module named \'dbos\'")\n')
    stderr = _start_message(tmp_path, fake_openai, extra_path=str(shadow))
    assert ("runs do not survive a crash: a run in flight is marked interrupted at the next "
            "start, because DBOS cannot be imported (No module named 'dbos'); reinstall "
            'dcbrain with its dependencies (pip install -e ".[local]")\n') in stderr
    assert not (tmp_path / "brain.db-dbos.sqlite").exists()
