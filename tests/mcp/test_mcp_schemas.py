"""An MCP server's tool schemas are checked at connection and validate in linear time."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dcbrain import TFChainInterpreter
from dcbrain.config import ConfigError, build_brain, load_config
from dcbrain.exceptions import TFToolError
from dcbrain.mcp import MCPTools, TFMCPError
from dcbrain.tfplan import TFInterpreterError
from support.mcp_servers import SCHEMA_SERVER


def schema_server(input_schema: dict[str, Any], output_schema: dict[str, Any] | None = None,
                  name: str = "hostile") -> MCPTools:
    """The test server whose one tool, ``lookup``, declares these schemas."""
    schemas = [input_schema] if output_schema is None else [input_schema, output_schema]
    return MCPTools(command=[sys.executable, str(SCHEMA_SERVER), *map(json.dumps, schemas)],
                    name=name)


HOSTILE_SCHEMA = {"type": "object", "properties": {
    "a": {"type": "string", "pattern": "^(a+)+$"},
    "rows": {"type": "array", "uniqueItems": True},
}}


@pytest.fixture(scope="module")
def hostile() -> Iterator[MCPTools]:
    with schema_server(HOSTILE_SCHEMA) as tools:
        yield tools


def test_a_catastrophic_pattern_in_an_input_schema_is_matched_in_linear_time(
    hostile: MCPTools,
) -> None:
    interpreter = TFChainInterpreter({}, tools=hostile)
    assert interpreter.evaluate("return lookup(a='aaaa')").value == '{"a": "aaaa"}'
    started = time.monotonic()
    with pytest.raises(TFInterpreterError, match=r"argument 'a': 'a+!' does not match"):
        interpreter.evaluate(f"return lookup(a='{'a' * 64}!')")
    assert time.monotonic() - started < 5  # hang guard: it took minutes to forever


def test_unique_items_on_a_large_argument_is_checked_in_linear_time(hostile: MCPTools) -> None:
    [lookup] = hostile
    rows = [{"id": index} for index in range(20_000)]
    started = time.monotonic()
    lookup.validate_values({"rows": rows})
    with pytest.raises(TFToolError, match="has non-unique elements"):
        lookup.validate_values({"rows": [*rows, {"id": 0}]})
    assert time.monotonic() - started < 5  # hang guard: pairwise comparison took ~40 s


def test_a_pattern_re2_cannot_run_fails_the_connection_naming_server_and_tool() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": r"(a)\1"}}}
    with pytest.raises(TFMCPError) as caught:
        schema_server(schema, name="bad").connect()
    message = str(caught.value)
    assert message.startswith("MCP server 'bad' (")
    assert ("did not start: tool 'lookup' input schema is refused at properties/a/pattern: "
            "'(a)\\\\1' is not a regular expression RE2 can run") in message


def test_a_catastrophic_pattern_in_an_output_schema_is_matched_in_linear_time() -> None:
    output = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
    with schema_server({"type": "object", "properties": {"a": {"type": "string"}}},
                       output) as tools:
        [lookup] = tools
        assert lookup.call(a="aaaa") == {"a": "aaaa"}
        started = time.monotonic()
        with pytest.raises(TFMCPError, match=r"its structured content does not match its "
                           r"output schema: a: 'a+!' does not match"):
            lookup.call(a="a" * 64 + "!")
        assert time.monotonic() - started < 5  # hang guard: the SDK's check took forever


def test_an_invalid_output_schema_fails_the_connection() -> None:
    output = {"type": "object", "properties": {"a": {"minLength": -1}}}
    with pytest.raises(TFMCPError, match=r"did not start: tool 'lookup' output schema is not "
                       r"a valid JSON Schema at properties/a/minLength: "):
        schema_server({"type": "object"}, output, name="bad").connect()


def test_a_bad_input_schema_is_a_config_error_naming_the_mcp_key(tmp_path: Path) -> None:
    schema = json.dumps({"type": "object", "properties": {"a": {"type": "no-such-type"}}})
    (tmp_path / "dcbrain.toml").write_text(
        "[llm.main]\nmodel = 'm'\napi_key = 'k'\nbase_url = 'http://127.0.0.1:9/v1'\n"
        "[memory]\npath = ''\n[mcp.bad]\n"
        f"command = {json.dumps([sys.executable, str(SCHEMA_SERVER), schema])}\n")
    with pytest.raises(ConfigError) as caught:
        build_brain(load_config(tmp_path / "dcbrain.toml"))
    [problem] = caught.value.problems
    assert problem.startswith("mcp.bad: MCP server 'bad' (")
    assert ("did not start: tool 'lookup' input schema is not a valid JSON Schema at "
            "properties/a/type: ") in problem
