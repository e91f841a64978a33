"""One frozen CallOptions per tool or chain, and its one merge rule."""

from __future__ import annotations

import dataclasses

import pytest

from dcbrain import Chain, ScriptedLLM
from dcbrain.tools import CallOptions, SchemaTool, Tool


def lookup(key: str) -> str:
    """Look a key up."""
    return key


async def remote(**arguments: object) -> object:
    return arguments


def test_constructor_keywords_build_the_options() -> None:
    tool = Tool(lookup, reuse=False, timeout_s=2, retries=1, requires_approval=True,
                trusted_args=["key"], side_effects=False, on_violation="ask")
    assert tool.options.reuse is False and tool.reuse is False
    assert tool.options.timeout_s == 2.0
    assert tool.retry is not None and tool.options.retry is tool.retry
    assert tool.options.trusted_args == frozenset({"key"})
    assert tool.options.on_violation == "ask" and tool.requires_approval is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.options.reuse = True  # type: ignore[misc]


def test_schema_tools_and_chains_hold_the_same_options() -> None:
    schema_tool = SchemaTool(remote, name="remote", timeout_s=1, approval_timeout_s=3)
    assert schema_tool.options == CallOptions(timeout_s=1.0, approval_timeout_s=3.0)
    chain = Chain(name="c", llm=ScriptedLLM(["x"]), reuse=False, retries=2, requires_approval=True)
    assert chain.options.reuse is False and chain.options.requires_approval is True
    assert chain.retry is chain.options.retry and chain.retry is not None


def test_merged_takes_what_is_given_and_keeps_the_rest() -> None:
    base = CallOptions.of("tool 'x'", reuse=False, trusted_args=["a"])
    merged = base.merged("tool 'x'", timeout_s=5, reuse=None, trusted_args=None)
    assert merged.reuse is False and merged.trusted_args == frozenset({"a"})
    assert merged.timeout_s == 5.0
    assert base.timeout_s is None  # the old value is unchanged
    assert base.merged("tool 'x'") is base


@pytest.mark.parametrize(("option", "value"), [
    ("timeout_s", -1), ("approval_timeout_s", 0), ("requires_approval", "yes"),
    ("trusted_args", "key"), ("on_violation", "maybe"), ("unknown", 1)])
def test_merged_refuses_bad_options(option: str, value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        CallOptions().merged("tool 'x'", **{option: value})


def test_setting_an_attribute_replaces_the_options() -> None:
    tool = Tool(lookup)
    before = tool.options
    tool.reuse = False
    assert tool.options is not before and tool.options.reuse is False
    assert before.reuse is True
