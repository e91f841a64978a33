"""The composition root: settings resolved once, the runtime every surface is built from."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from dcbrain.config import load_config
from dcbrain.config.runtime import AppSettings, Runtime, build_runtime
from dcbrain.memory import SQLiteMemory
from dcbrain.server import create_app
from dcbrain.server.settings import ServerSettings
from dcbrain.server.testing import serve_in_thread
from support.configs import fake_llm_toml
from support.fake_openai import FakeOpenAIServer

PLAN_REPLY = "```tf_plan\nreturn 6 * 7\n```"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-test")


def _config(tmp_path: Path, server: FakeOpenAIServer, memory: str) -> Path:
    path = tmp_path / "dcbrain.toml"
    path.write_text(fake_llm_toml(server, memory=memory, extra="[retention]\nhours = 2\n"))
    return path


def test_the_runtime_shares_one_brain_and_its_memory_as_the_store(
        tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    settings = AppSettings(load_config(_config(tmp_path, fake_openai, "memory.db")))
    runtime = build_runtime(settings)
    try:
        factory = runtime.brain_factory()
        assert factory is not None and factory() is factory() is runtime.brain
        assert isinstance(runtime.store, SQLiteMemory)
        assert runtime.brain is not None and runtime.store is runtime.brain.memory
        assert runtime.conversations is runtime.store and runtime.memory is None
        assert runtime.retention is not None and runtime.retention[0] == 2 * 3600
    finally:
        runtime.close()
        runtime.close()  # closing twice is harmless


def test_without_memory_a_process_that_keeps_no_runs_opens_no_store(
        tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    config = load_config(_config(tmp_path, fake_openai, ""))
    asked = build_runtime(AppSettings(config, keep_runs=False))
    assert asked.brain is not None and asked.store is None and asked.conversations is None
    assert list(tmp_path.glob("*.db")) == []
    served = build_runtime(AppSettings(config))
    assert served.store is not None and served.conversations is None
    served.close()
    api_node = build_runtime(AppSettings(config, brain=False))
    assert (api_node.brain, api_node.store, api_node.brain_factory()) == (None, None, None)


def test_create_app_takes_the_runtime_and_its_settings_as_data(
        tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    runtime = build_runtime(AppSettings(load_config(_config(tmp_path, fake_openai, "m.db"))))
    fake_openai.reply(PLAN_REPLY)
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    app = create_app(runtime, ServerSettings(api_token="t0ken", max_body_bytes=200))
    auth = {"Authorization": "Bearer t0ken"}
    with serve_in_thread(app) as base, httpx.Client(base_url=base, headers=auth) as http:
        assert http.post("/v1/conversations/c1/messages",
                         json={"content": "x" * 300}).status_code == 413
        assert httpx.get(f"{base}/v1/runs/nope").status_code == 401
        posted = http.post("/v1/conversations/c1/messages", json={"content": "6 times 7?"})
        assert posted.status_code == 202, posted.text
        run_id = posted.json()["run_id"]
        final = None
        with http.stream("GET", f"/v1/runs/{run_id}/events", timeout=30) as events:
            for line in events.iter_lines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    if event.get("type") == "final":
                        final = event
                        break
        assert final is not None
        run = http.get(f"/v1/runs/{run_id}").json()
        assert (run["status"], run["result"]["final_result"]) == ("succeeded", 42)
        conversation = http.get("/v1/conversations/c1").json()
        assert [run["run_id"] for run in conversation["runs"]] == [run_id]
    runtime.close()


def test_create_app_refuses_settings_without_a_runtime() -> None:
    with pytest.raises(TypeError, match="needs a Runtime"):
        create_app(lambda: None, ServerSettings())  # type: ignore[arg-type,return-value]


def test_durable_runs_are_built_once_on_the_store_and_execute_only_when_asked(
        tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    config = load_config(_config(tmp_path, fake_openai, "runs.db"))
    with build_runtime(AppSettings(config, durable="auto", concurrency=3)) as executing:
        assert executing.durable is not None and executing.engine is executing.durable.engine
        assert executing.durable.capacity == 3
        assert (tmp_path / "runs.db-journal.sqlite").exists()
    with build_runtime(AppSettings(config, durable="on", executes=False)) as queuing:
        assert queuing.durable is not None and queuing.durable.capacity is None
    off = build_runtime(AppSettings(config))
    assert off.durable is None and off.engine is None
    off.close()


def test_durable_runs_without_a_database_need_the_memory_file(
        tmp_path: Path, fake_openai: FakeOpenAIServer) -> None:
    config = load_config(_config(tmp_path, fake_openai, ""))
    with pytest.raises(ValueError, match=r"\[memory\] path must name the SQLite file"):
        build_runtime(AppSettings(config, keep_runs=False, durable="on"))


def test_a_hand_made_runtime_runs_a_factory_per_run() -> None:
    built: list[object] = []

    def brains() -> object:
        built.append(object())
        return built[-1]

    runtime = Runtime(brains=brains)  # type: ignore[arg-type]
    factory = runtime.brain_factory()
    assert factory is brains and factory() is not factory()
    with pytest.raises(ValueError, match="needs a runtime with a brain and a store"):
        create_app(runtime)
