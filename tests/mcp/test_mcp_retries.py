"""A call whose connection to its MCP server fails is tried again, on a new session
(real server subprocesses over HTTP and stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dcbrain import DCBrain, ScriptedLLM, TFChainInterpreter
from dcbrain.config import config_from_dict, connect_mcp_servers
from dcbrain.exceptions import TFMCPTransportError
from dcbrain.mcp import MCPTools
from dcbrain.retries import Backoff
from dcbrain.tfplan import TFInterpreterError
from support.brain_scripts import plan, verdict
from support.mcp_servers import CALC_SERVER, hostile_command, hostile_http_server

ECHO = 'return echo(text="hi")'
ECHOED = 'echo from the server: {"text": "hi"}'


def test_a_call_whose_connection_drops_is_retried_and_the_run_succeeds() -> None:
    with hostile_http_server("--drop", "2") as url, \
            MCPTools(url=url, name="notes", backoff=0) as tools:
        brain = DCBrain(default_llm=ScriptedLLM([plan(ECHO)]),
                        default_validate_llm=ScriptedLLM([verdict(True)]), tools=list(tools))
        result = brain.run("echo hi", conversation_id="c1")  # through the sandbox
    assert (result.status, result.final_result) == ("succeeded", ECHOED)
    retries = [e for e in result.events if e["type"] == "call_retry"]
    assert [(e["name"], e["attempt"], e["attempts"]) for e in retries] == [
        ("echo", 1, 3), ("echo", 2, 3)]
    assert all(e["error"].startswith("TFMCPTransportError: MCP server 'notes': tool 'echo' "
                                     "failed: MCPError: Connection closed") for e in retries)
    assert [e["status"] for e in result.events
            if e["type"] == "call_finished" and e["kind"] == "tool"] == ["ok"]


def test_a_stdio_server_that_exits_during_a_call_is_started_again(tmp_path: Path) -> None:
    marker = tmp_path / "exited"
    with MCPTools(command=hostile_command("--exit-once", str(marker)),
                  backoff=Backoff(initial_s=0.01, max_s=0.05)) as tools:
        value = TFChainInterpreter({}, tools=tools).evaluate(ECHO).value
    assert value == ECHOED and marker.exists()


def test_without_retries_a_dropped_call_fails_as_transient_and_the_next_call_works() -> None:
    with hostile_http_server("--drop", "1") as url, MCPTools(url=url, retries=0) as tools:
        interpreter = TFChainInterpreter({}, tools=tools)
        with pytest.raises(TFInterpreterError) as caught:
            interpreter.evaluate(ECHO)
        assert caught.value.kind == "TFMCPTransportError"
        assert getattr(caught.value, "transient", False) is True
        assert interpreter.evaluate(ECHO).value == ECHOED


def test_a_servers_own_error_is_not_retried() -> None:
    with MCPTools(command=[sys.executable, str(CALC_SERVER)], name="calc", backoff=0) as calc:
        retried: list[int] = []

        class Observer:
            def on_call_start(self, record: object) -> None: ...
            def on_call_end(self, record: object) -> None: ...
            def on_call_retry(self, record: object, *, attempt: int, **_: object) -> None:
                retried.append(attempt)

        interpreter = TFChainInterpreter({}, tools=calc, observer=Observer())
        with pytest.raises(TFInterpreterError, match="MCP tool 'explode' of server 'calc'") \
                as caught:
            interpreter.evaluate("return explode()")
    assert caught.value.kind == "TFToolError" and retried == []
    assert getattr(caught.value, "transient", False) is False


def test_the_config_sets_a_servers_retries_and_backoff(tmp_path: Path) -> None:
    with hostile_http_server() as url:
        config = config_from_dict({"mcp": {
            "once": {"url": url, "retries": 0},
            "patient": {"url": url, "retries": 5,
                        "backoff": {"initial_s": 0.1, "max_s": 2, "jitter": False}},
            "fixed": {"url": url, "backoff": 0.25},
        }}, base_dir=tmp_path, source="dcbrain.toml")
        servers = connect_mcp_servers(config)
        try:
            once, patient, fixed = (server[0].retry for server in servers)
        finally:
            for server in servers:
                server.close()
    assert once is None
    assert patient is not None and patient.retries == 5
    assert patient.backoff == Backoff(initial_s=0.1, max_s=2.0, jitter=False)
    assert fixed is not None and fixed.retries == 2 and fixed.backoff == Backoff.fixed(0.25)
    assert TFMCPTransportError in fixed.retry_on or fixed.retryable(
        TFMCPTransportError("lost"))

