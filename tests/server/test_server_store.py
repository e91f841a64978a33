"""Which store ``dcbrain serve`` records runs in, with the config's memory on and off."""

from __future__ import annotations

from pathlib import Path

import pytest

from dcbrain.composition import FALLBACK_DB, brain_factory_from_config
from dcbrain.config import find_config
from dcbrain.memory import Memory, SQLiteMemory, SQLiteRunStore

pytestmark = pytest.mark.usefixtures("api_key")

LLM = ('[llm.main]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
       'api_key_env = "FAKE_API_KEY"\n')


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-test")


def test_with_memory_runs_and_conversations_share_the_memory_file(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text(LLM + '[memory]\npath = "brain.db"\n')
    store, factory = brain_factory_from_config(find_config(config))
    try:
        assert isinstance(store, SQLiteMemory)
        assert Path(store.path) == tmp_path / "brain.db"
        assert factory().memory is store  # failed attempts and conversations: same file
    finally:
        store.close()


def test_with_memory_off_runs_go_to_a_run_store_of_their_own(tmp_path: Path) -> None:
    config = tmp_path / "dcbrain.toml"
    config.write_text(LLM + '[memory]\npath = ""\n')
    store, factory = brain_factory_from_config(find_config(config))
    try:
        assert isinstance(store, SQLiteRunStore) and not isinstance(store, Memory)
        assert Path(store.path) == tmp_path / FALLBACK_DB
        assert factory().memory is None
    finally:
        store.close()
