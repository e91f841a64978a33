"""``dcbrain config show`` hides every secret it can know of: values of secret-named keys
(the config's and a server's ``env``), URLs' credentials, a secret written again anywhere
else (a command's arguments), the value of the variable ``api_key_env`` names, and the
value after a ``--token``-like flag."""

from __future__ import annotations

from pathlib import Path

from support.cli_runner import RunCLI

FILE = '''\
[roles]
default = "Main"
[llm.Main]
model = "m"
api_key = "sk-live-4242424242"
[llm.Other]
model = "m"
api_key_env = "OTHER_LLM_KEY"
[mcp.notes]
command = ["notes", "--api-key", "ak-999888777", "--token=tk-111222333",
           "--key", "sk-live-4242424242"]
[mcp.notes.env]
AUTHORIZATION = "Bearer bt-555666777"
AUTH_HEADER = "x-hdr-123123"
SESSION_COOKIE = "ck-321321321"
OPENAI_KEY = "ok-777666555"
MODE = "read"
ECHO = "value env-secret-246810 here"
[mcp.web]
url = "https://sk-user-13579@web.example/mcp?api_key=qk-864208642&team=x"
'''

SECRETS = ("sk-live-4242424242", "ak-999888777", "tk-111222333", "bt-555666777",
           "x-hdr-123123", "ck-321321321", "ok-777666555", "env-secret-246810",
           "qk-864208642", "sk-user-13579")


def test_config_show_leaks_no_secret_in_any_form(tmp_path: Path, run_cli: RunCLI) -> None:
    (tmp_path / "dcbrain.toml").write_text(FILE)
    env = {"OTHER_LLM_KEY": "env-secret-246810"}
    for args in (("config", "show", "--json"), ("config", "show")):
        done = run_cli(*args, env=env)
        assert done.returncode == 0, done.stderr
        leaked = [secret for secret in SECRETS if secret in done.stdout + done.stderr]
        assert leaked == [], done.stdout
        assert '"read"' in done.stdout and "OTHER_LLM_KEY" in done.stdout
        assert "team=x" in done.stdout and "web.example" in done.stdout
