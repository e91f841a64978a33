"""An API key never reaches the operators' channels: a provider that echoes it in an error
(as some do), and a base URL with a password, leave no trace of either in ``dcbrain ask``'s
JSON log lines, its result, its JSONL trace or the spans it exports over OTLP; nor do a
tool's arguments reach the log or the spans, unless ``[telemetry] span_arguments`` puts
them into the spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli_runner import RunCLI
from support.fake_openai import FakeOpenAIServer
from support.otlp_receiver import OTLPReceiver

SECRET_KEY = "sk-live-8c1f0e5d7a9b3c2e"
URL_PASSWORD = "pw-4f2a9e7c1d"
ARGUMENT = "acct-DE89370400440532013000"

TOOLS = '''\
def transfer(account: str) -> str:
    """Transfer to ``account``."""
    return "done"
'''


def write_config(tmp_path: Path, server: FakeOpenAIServer, telemetry: str = "") -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    base = server.base_url.replace("http://", f"http://ops:{URL_PASSWORD}@")
    path = tmp_path / "dcbrain.toml"
    path.write_text(
        'tools = ["tools.py"]\n'
        "[llm.main]\n"
        f'base_url = "{base}"\n'
        'model = "fake-model"\n'
        'api_key_env = "MY_LLM_KEY"\n'
        "max_retries = 0\n"
        "[memory]\n"
        'path = ""\n'
        "[brain]\nmax_iterations = 2\n" + telemetry)
    return path


@pytest.mark.parametrize("span_arguments", [False, True])
def test_a_key_echoed_by_the_provider_reaches_no_log_result_trace_or_span(
    tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer, span_arguments: bool
) -> None:
    write_config(tmp_path, fake_openai,
                 "[telemetry]\nspan_arguments = true\n" if span_arguments else "")
    fake_openai.reply(f'```tf_plan\nreturn transfer(account="{ARGUMENT}")\n```')
    for _ in range(4):
        fake_openai.fail(401, f"Incorrect API key provided: {SECRET_KEY}. You can find "
                         f"your key at https://ops:{URL_PASSWORD}@example/keys")
    receiver = OTLPReceiver()
    trace = tmp_path / "trace.jsonl"
    try:
        done = run_cli("ask", "pay", "--log-format", "json", "--trace", str(trace),
                       env={"MY_LLM_KEY": SECRET_KEY,
                            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        exported = b"".join(receiver.bodies)
    finally:
        receiver.close()
    assert done.returncode != 0 or done.stdout
    assert len(fake_openai.requests) >= 2  # the plan, then the failing calls
    assert exported, "no spans were exported"
    channels = {"stdout": done.stdout, "stderr": done.stderr, "trace": trace.read_text(),
                "otlp": exported.decode("utf-8", "replace")}
    for name, text in channels.items():
        assert SECRET_KEY not in text, name
        assert URL_PASSWORD not in text, name
    assert "Incorrect API key provided" in done.stdout + done.stderr  # the error is told
    assert ARGUMENT not in channels["stderr"]
    assert (ARGUMENT in channels["otlp"]) is span_arguments
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert lines, done.stderr
