"""``dcbrain ask`` with a database: a conversation's failed attempts outlive the process."""

from __future__ import annotations

import json
from pathlib import Path

from dcbrain.brain.context import contextual_plan_info_key
from dcbrain.memory import SQLiteMemory
from support.cli_runner import RunCLI
from support.configs import fake_llm_toml
from support.fake_openai import FakeOpenAIServer

KEY = {"FAKE_API_KEY": "sk-test"}


def write_config(tmp_path: Path, server: FakeOpenAIServer) -> None:
    (tmp_path / "dcbrain.toml").write_text(
        fake_llm_toml(server, memory="brain.db", extra="[brain]\nmax_iterations = 1\n"))


def test_the_next_process_sees_the_failed_attempt_and_success_clears_it(
    tmp_path: Path, run_cli: RunCLI, fake_openai: FakeOpenAIServer
) -> None:
    write_config(tmp_path, fake_openai)
    fake_openai.reply("```tf_plan\nreturn 6 + 7\n```")
    fake_openai.reply_json({"is_solved": False, "suggestion": "multiply, do not add"})
    first = run_cli("ask", "What is 6 times 7?", "--conversation", "c1", env=KEY)
    assert json.loads(first.stdout)["status"] == "failed", first.stderr

    fake_openai.reply("```tf_plan\nreturn 6 * 7\n```")
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    second = run_cli("ask", "What is 6 times 7?", "--conversation", "c1", env=KEY)
    assert json.loads(second.stdout)["final_result"] == 42, second.stderr

    system = fake_openai.requests[2].messages[0]["content"]
    assert "## Earlier attempts that did not solve the question" in system
    assert "```tf_plan\nreturn 6 + 7\n```" in system
    assert "The validator's suggestion: multiply, do not add" in system
    with SQLiteMemory(tmp_path / "brain.db") as store:
        assert store.get_value(contextual_plan_info_key("c1")) is None
