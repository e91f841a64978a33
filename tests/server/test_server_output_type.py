"""``[brain] output_type``: ``dcbrain serve`` validates every answer into the configured
type before the run succeeds and shows the type's JSON Schema at ``GET /v1/schema``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from support.configs import write_tools_config
from support.durable_processes import free_port
from support.fake_openai import FakeOpenAIServer
from support.server_app import PATIENCE_S, Api, wait_until_listening

TOOLS = '''
from pydantic import BaseModel


class Quote(BaseModel):
    """A product's price."""

    product: str
    price: float


def look_up(product: str) -> dict:
    """The catalogue entry of ``product``."""
    return {"product": product, "price": 9.5}
'''


def test_serve_validates_answers_into_the_configured_type_and_shows_its_schema(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = write_tools_config(tmp_path, fake_openai, TOOLS, memory="brain.db",
                                extra='[brain]\noutput_type = "tools.py:Quote"\n')
    # the first answer lacks the price: not a Quote, so planned again
    fake_openai.reply('```tf_plan\nreturn {"product": "tea"}\n```')
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    fake_openai.reply('```tf_plan\nreturn look_up(product="tea")\n```')
    fake_openai.reply_json({"is_solved": True, "suggestion": ""})
    port = free_port()
    env = dict(os.environ, FAKE_API_KEY="sk-test", PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("DCBRAIN_API_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "dcbrain.cli", "serve", "--config", str(config),
         "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_listening(process, base_url)
        api = Api(base_url)
        schema = api.http.get("/v1/schema").json()
        run_id = api.send("c1", "What does tea cost?")
        stream = api.stream(run_id)
        run = api.http.get(f"/v1/runs/{run_id}").json()
        api.http.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=PATIENCE_S)
    assert schema["output_type"] == "Quote"
    assert schema["output_schema"]["required"] == ["product", "price"]
    assert run["status"] == "succeeded"
    assert run["result"]["final_result"] == {"product": "tea", "price": 9.5}
    mismatches = [e for e in stream.events if e["type"] == "error"
                  and e["source"] == "output_type"]
    assert len(mismatches) == 1 and "price" in mismatches[0]["error"]
    assert run["result"]["iterations"] == 2


def test_an_output_type_that_cannot_be_found_is_a_config_error_naming_the_key(
    tmp_path: Path,
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    config = tmp_path / "dcbrain.toml"
    config.write_text('tools = ["tools.py"]\n[llm.main]\nmodel = "m"\napi_key = "none"\n'
                      '[brain]\noutput_type = "tools.py:Price"\n')
    environment = {k: v for k, v in os.environ.items() if k != "DCBRAIN_API_TOKEN"}
    environment["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-m", "dcbrain.cli", "serve", "--config",
                           str(config), "--port", str(free_port())], cwd=tmp_path,
                          capture_output=True, text=True, timeout=PATIENCE_S, env=environment)
    assert done.returncode == 2
    assert "brain.output_type: 'tools.py:Price': tools.py has no Price" in done.stderr
