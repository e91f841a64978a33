"""compile_schema: a schema from a plan, a config file or an MCP server is checked once and
validates in time linear in the instance (RE2 patterns, hashed ``uniqueItems``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dcbrain.exceptions import TFSchemaError
from dcbrain.schemas import MAX_SCHEMA_DEPTH, compile_schema

CATASTROPHIC = "^(a+)+$"
HOSTILE_TEXT = "a" * 64 + "!"  # Python's backtracking engine needs ~2**64 steps for this


def messages(schema: dict[str, Any], instance: Any) -> list[str]:
    return [error.message for error in compile_schema(schema, "test schema").errors(instance)]


def test_a_catastrophic_pattern_is_matched_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": CATASTROPHIC}}}
    started = time.monotonic()
    assert messages(schema, {"a": HOSTILE_TEXT}) == [
        f"{HOSTILE_TEXT!r} does not match {CATASTROPHIC!r}"]
    assert messages(schema, {"a": "a" * 100_000}) == []
    assert time.monotonic() - started < 5  # hang guard: minutes to forever before


def test_pattern_properties_and_additional_properties_use_the_same_engine() -> None:
    schema = {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}},
              "additionalProperties": False}
    started = time.monotonic()
    assert messages(schema, {"aaaa": 1}) == []
    assert messages(schema, {"aaaa": "x"}) == ["'x' is not of type 'integer'"]
    assert messages(schema, {HOSTILE_TEXT: 1}) == [
        f"{HOSTILE_TEXT!r} does not match any of the regexes: {CATASTROPHIC!r}"]
    assert time.monotonic() - started < 5


def test_patterns_search_anywhere_as_json_schema_says() -> None:
    schema = {"type": "string", "pattern": "b+"}
    assert messages(schema, "abbc") == []
    assert messages(schema, "ac") == ["'ac' does not match 'b+'"]
    assert messages({"type": "string", "pattern": r"^\u00e9\p{L}$"}, "éa") == []


@pytest.mark.parametrize(("pattern", "what"), [
    (r"^(a)\1$", "backreference"),
    (r"^(?=a)a$", "lookahead"),
    (r"(?<!x)y", "lookbehind"),
])
def test_a_pattern_re2_cannot_run_is_refused_naming_its_origin_and_place(
    pattern: str, what: str
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": pattern}}}
    with pytest.raises(TFSchemaError) as caught:
        compile_schema(schema, "chain 'x': output_json_schema")
    message = str(caught.value)
    assert message.startswith(
        "chain 'x': output_json_schema is refused at properties/a/pattern: ")
    assert repr(pattern) in message and "RE2" in message, what
    with pytest.raises(TFSchemaError, match=r"at patternProperties/\(a\)\\1: "):
        compile_schema({"patternProperties": {r"(a)\1": {}}}, "test schema")


def test_a_property_named_like_a_keyword_is_not_taken_for_one() -> None:
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}},
              "default": {"pattern": r"(a)\1"}}
    assert messages(schema, {"pattern": "(a)"}) == []


def test_unique_items_is_linear_and_keeps_json_schema_equality() -> None:
    schema = {"type": "array", "uniqueItems": True}
    many = [{"id": index, "tags": [index]} for index in range(20_000)]
    started = time.monotonic()
    assert messages(schema, many) == []
    assert len(messages(schema, [*many, {"tags": [0], "id": 0}])) == 1
    assert time.monotonic() - started < 5  # hang guard: pairwise comparison took ~40 s
    assert len(messages(schema, [1, 1.0])) == 1
    assert messages(schema, [1, True]) == []
    assert messages(schema, [0, False, None, "", [], {}]) == []
    assert len(messages(schema, [{"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1}])) == 1
    assert messages(schema, [[1, 2], [2, 1]]) == []
    assert messages({"type": "array", "uniqueItems": False}, [1, 1]) == []


def test_an_invalid_schema_says_its_origin_and_the_json_path_of_the_bad_part() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "no-such-type"}}}
    with pytest.raises(TFSchemaError) as caught:
        compile_schema(schema, "tool 'y' input schema")
    assert str(caught.value).startswith(
        "tool 'y' input schema is not a valid JSON Schema at properties/a/type: ")
    assert caught.value.origin == "tool 'y' input schema"
    assert caught.value.where == "properties/a/type"


def test_values_that_are_not_json_are_refused() -> None:
    with pytest.raises(TFSchemaError, match=r"at properties/a/default: .*set"):
        compile_schema({"properties": {"a": {"default": {1, 2}}}}, "test schema")


def test_a_too_deep_schema_is_refused_before_it_is_walked_recursively() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        schema = {"type": "array", "items": schema}
    with pytest.raises(TFSchemaError, match=f"nested deeper than {MAX_SCHEMA_DEPTH} levels"):
        compile_schema(schema, "test schema")


def test_a_reference_to_itself_without_end_is_refused() -> None:
    with pytest.raises(TFSchemaError, match=r"test schema is refused at the top level: .*\$ref"):
        compile_schema({"$ref": "#"}, "test schema")
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    assert messages(tree, {"child": {"child": {}}}) == []


def test_references_that_fan_out_are_refused_before_they_double_forty_times() -> None:
    definitions: dict[str, Any] = {"d0": {"type": "integer"}}
    for level in range(1, 41):
        twice = {"$ref": f"#/$defs/d{level - 1}"}
        definitions[f"d{level}"] = {"allOf": [twice, twice]}
    started = time.monotonic()
    with pytest.raises(TFSchemaError, match="test schema is refused at the top level: "
                       "validating the value needs more work than the budget allows"):
        compile_schema({"$defs": definitions, "$ref": "#/$defs/d40"}, "test schema")
    assert time.monotonic() - started < 10  # hang guard: 2**40 references before


def test_enum_is_a_lookup_not_a_scan() -> None:
    names = [f"name-{index}" for index in range(5_000)]
    schema = {"type": "array", "items": {"enum": [*names, 1, True, {"a": [1]}]}}
    started = time.monotonic()
    assert messages(schema, names * 2) == []
    assert len(messages(schema, [f"other-{index}" for index in range(10_000)])) == 100
    assert time.monotonic() - started < 5  # hang guard: 10**8 comparisons before
    assert messages(schema, [1.0, True, {"a": [1.0]}]) == []
    assert len(messages(schema, [False])) == 1


def test_a_large_schema_on_a_large_value_stops_at_the_work_budget() -> None:
    schema = {"type": "array",
              "items": {"anyOf": [{"const": f"name-{index}"} for index in range(1_000)]}}
    started = time.monotonic()
    with pytest.raises(TFSchemaError, match="test schema: validating the value needs more "
                       "work than the budget allows"):
        compile_schema(schema, "test schema").errors([f"other-{i}" for i in range(10_000)])
    assert time.monotonic() - started < 5  # hang guard: 10**7 subschemas before
    assert messages(schema, ["name-1", "name-999"]) == []


def test_a_recursive_schema_follows_a_reference_per_value_of_a_large_instance() -> None:
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    forest = {"kids": [{"kids": [{} for _ in range(9)]} for _ in range(1_000)]}
    assert messages(tree, forest) == []
    assert len(messages(tree, {"kids": [{"kids": 1}]})) == 1


def test_an_instance_nested_too_deeply_for_a_recursive_schema_is_an_error_not_a_crash() -> None:
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    deep: dict[str, Any] = {}
    for _ in range(5_000):
        deep = {"child": deep}
    with pytest.raises(TFSchemaError, match="nested too deeply"):
        compile_schema(tree, "test schema").errors(deep)


@pytest.fixture
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback TCP port that records whether anything connected to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            seen.append(connection.recv(100))
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/schema.json", seen
    stop.set()
    thread.join()
    server.close()


def test_a_remote_reference_is_never_fetched(listener: tuple[str, list[bytes]]) -> None:
    url, seen = listener
    schema = {"type": "object", "properties": {"a": {"$ref": url}}}
    with pytest.raises(TFSchemaError, match=r"at properties/a/\$ref: .* is not a reference "
                       r"within the schema"):
        compile_schema(schema, "test schema")
    missing = compile_schema({"properties": {"a": {"$ref": "#/$defs/none"}}}, "test schema")
    with pytest.raises(TFSchemaError, match=r"a \$ref does not resolve within the schema"):
        missing.errors({"a": 1})
    assert seen == []


def test_a_schema_below_the_top_level_cannot_switch_to_another_draft() -> None:
    schema = {"type": "object", "properties": {"a": {
        "$schema": "http://json-schema.org/draft-07/schema#", "pattern": "^(a+)+$"}}}
    with pytest.raises(TFSchemaError, match=r"at properties/a/\$schema: .*only at the top"):
        compile_schema(schema, "test schema")
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#",
              "properties": {"a": {"pattern": "^(a+)+$"}}}
    started = time.monotonic()
    assert len(messages(draft7, {"a": HOSTILE_TEXT})) == 1
    assert time.monotonic() - started < 5


def test_unevaluated_properties_with_pattern_properties_is_refused() -> None:
    schema = {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(TFSchemaError, match="unevaluatedProperties"):
        compile_schema(schema, "test schema")
    assert messages({"properties": {"a": {}}, "unevaluatedProperties": False}, {"b": 1})


def test_compiling_the_same_schema_again_is_cached_and_independent_of_the_callers_dict() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    first = compile_schema(schema, "one")
    schema["properties"]["n"]["type"] = "string"
    assert [e.message for e in first.errors({"n": "x"})] == ["'x' is not of type 'integer'"]
    again = compile_schema({"type": "object", "properties": {"n": {"type": "integer"}}}, "two")
    assert again.validator is first.validator
