"""ChainResult: accumulating results with ``+=`` (seed 001)."""

from __future__ import annotations

from dcbrain import ChainResult, TextMessage
from dcbrain.usage import Usage


def result(content: str | dict[str, object], **kwargs: object) -> ChainResult:
    return ChainResult(content=content, **kwargs)  # type: ignore[arg-type]


def test_iadd_merges_usage_messages_tool_returns_and_logs() -> None:
    origin = TextMessage("question")
    total = ChainResult(
        content="draft",
        origin=origin,
        usage=Usage.of_call("a", 10, 2),
        intermediate_msgs=[{"role": "tool", "content": "1"}],
        tool_returns=[{"tool": "x"}],
        logs=["first"],
    )
    later_generate = TextMessage("final", role="assistant")
    total += ChainResult(
        content="final",
        origin=TextMessage("other"),
        current_generate=later_generate,
        usage=Usage.of_call("b", 5, 1),
        intermediate_msgs=[{"role": "tool", "content": "2"}],
        tool_returns=[{"tool": "y"}],
        logs=["second"],
    )
    assert total.content == "final"
    assert total.origin is origin
    assert total.current_generate is later_generate
    assert (total.usage.prompt_tokens, total.usage.completion_tokens, total.usage.requests) == (
        15,
        3,
        2,
    )
    assert set(total.usage.per_model) == {"a", "b"}
    assert [m["content"] for m in total.intermediate_msgs] == ["1", "2"]
    assert [r["tool"] for r in total.tool_returns] == ["x", "y"]
    assert total.logs == ["first", "second"]


def test_dict_contents_merge_with_later_keys_winning() -> None:
    total = result({"a": 1, "b": 1})
    total += result({"b": 2, "c": 3})
    assert total.content == {"a": 1, "b": 2, "c": 3}


def test_empty_later_content_keeps_the_earlier_one() -> None:
    total = result("kept")
    total += result("")
    total += result({})
    assert total.content == "kept"


def test_a_later_content_of_another_type_replaces_it() -> None:
    total = result({"a": 1})
    total += result("text now")
    assert total.content == "text now"


def test_an_empty_result_takes_everything_from_the_first_added() -> None:
    origin = TextMessage("q")
    total = ChainResult()
    total += ChainResult(content="x", origin=origin, usage=Usage.of_call("m", 1, 1))
    assert total.origin is origin
    assert total.usage.total_tokens == 2
    assert total.current_generate is None


def test_iadd_does_not_alias_the_added_results_lists_or_usage() -> None:
    added = ChainResult(logs=["a"], usage=Usage.of_call("m", 1, 1))
    total = ChainResult()
    total += added
    total.logs.append("b")
    total += ChainResult(usage=Usage.of_call("m", 1, 1))
    assert added.logs == ["a"]
    assert added.usage.requests == 1
