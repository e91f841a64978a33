"""Which store ``dcbrain serve`` records runs in, with the config's memory on and off."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcbrain.config import find_config
from dcbrain.config.composition import FALLBACK_DB
from dcbrain.config.runtime import AppSettings, build_runtime
from dcbrain.memory import Memory, SQLiteMemory, SQLiteRunStore
from dcbrain.server import create_app
from dcbrain.server.testing import serve_in_thread
from support.fake_openai import FakeOpenAIServer
from support.server_app import Api

pytestmark = pytest.mark.usefixtures("api_key")

LLM = ('[llm.main]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
       'api_key_env = "FAKE_API_KEY"\n')


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-test")


def test_with_memory_runs_and_conversations_share_the_memory_file(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text(LLM + '[memory]\npath = "brain.db"\n')
    with build_runtime(AppSettings(find_config(config))) as runtime:
        store = runtime.store
        assert isinstance(store, SQLiteMemory)
        assert Path(store.path) == tmp_path / "brain.db"
        assert runtime.brain is not None
        assert runtime.brain.memory is store  # failed attempts and conversations: same file


def test_with_memory_off_runs_go_to_a_run_store_of_their_own(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text(LLM + '[memory]\npath = ""\n')
    with build_runtime(AppSettings(find_config(config))) as runtime:
        store = runtime.store
        assert isinstance(store, SQLiteRunStore) and not isinstance(store, Memory)
        assert Path(store.path) == tmp_path / FALLBACK_DB
        assert runtime.brain is not None and runtime.brain.memory is None


def test_every_run_executes_on_the_one_configured_brain(
    tmp_path: Path, fake_openai: FakeOpenAIServer, api_key: None
) -> None:
    """No per-run copy: what is set on the brain (subscribers, trace file, isolation)
    reaches the runs the server executes."""
    config = tmp_path / "dcbrain.toml"
    config.write_text(f'[llm.main]\nbase_url = "{fake_openai.base_url}"\nmodel = "m"\n'
                      'api_key_env = "FAKE_API_KEY"\nmax_retries = 0\n'
                      '[memory]\npath = "brain.db"\n')
    fake_openai.reply("```tf_plan\nreturn 6 * 7\n```")
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    runtime = build_runtime(AppSettings(find_config(config)))
    brain, factory = runtime.brain, runtime.brain_factory()
    assert brain is not None and factory is not None
    assert factory() is brain and factory() is brain
    seen: list[str] = []
    brain.subscribe(lambda event: seen.append(str(event.type)))
    with runtime, serve_in_thread(create_app(runtime)) as base_url:
        api = Api(base_url)
        run = api.wait_for(api.send("c1", "six times seven?"))
        api.http.close()
    assert (run["status"], run["result"]["final_result"]) == ("succeeded", 42)
    assert seen[0] == "run_started" and seen[-1] == "final"
