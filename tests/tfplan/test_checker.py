"""The static check: all problems of a plan, before it runs, with positions."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from dcbrain.tfplan import CallableSpec, Interpreter, check


def search(query: str, limit: int = 5) -> list[str]:
    """Search the web."""
    return [query] * limit


class FakeChain:
    """Looks like a chain to the checker: keyword arguments described by a JSON schema."""

    description = "Summarize a text"
    callable_kind = "chain"
    parameters_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }

    def __call__(self, **kwargs: Any) -> str:
        return "summary"


SPECS = Interpreter({"search": search, "summarize": FakeChain()}).specs


def messages(source: str) -> list[str]:
    return [f"{p.line}:{p.col}: {p.message}" for p in check(source, SPECS)]


def test_valid_plan_has_no_problems() -> None:
    source = (
        "hits = search(query='lyon', limit=2)\n"
        "def top(xs):\n    return xs[0]\n"
        "summary = summarize(text=top(hits))\n"
        "a, b = parallel(search(query='a'), summarize(text='b'))\n"
        "print(summary.upper(), json.dumps(hits), math.pi)\n"
    )
    assert messages(source) == []


def test_unknown_function_suggests_a_close_name() -> None:
    (problem,) = messages("x = serch(query='q')")
    assert problem.startswith("1:5: unknown function 'serch'")
    assert "did you mean 'search'" in problem


def test_never_assigned_name() -> None:
    (problem,) = messages("print(totl)\ntotal = 1")
    assert problem.startswith("1:7: name 'totl' is never assigned")


def test_keyword_problems_of_a_chain() -> None:
    problems = messages("summarize(txt='a')\nsummarize('a')")
    assert "1:11: chain 'summarize' has no argument 'txt' (expected: text)" in problems
    assert "1:1: chain 'summarize' is missing required argument 'text'" in problems
    keyword_only = "2:1: chain 'summarize' takes keyword arguments only"
    assert any(p.startswith(keyword_only) for p in problems)


def test_tool_signature_is_the_schema() -> None:
    problems = messages("search(q='x')\nsearch('x', 1, 2)")
    assert "1:1: tool 'search' is missing required argument 'query'" in problems
    assert "2:1: tool 'search' takes at most 2 positional arguments, got 3" in problems


def test_unknown_method_is_reported() -> None:
    assert messages("x = [1]\nx.push(2)") == ["2:1: no value in tf_plan has a method 'push'"]


def test_all_problems_are_reported_in_source_order() -> None:
    problems = messages("a = nope()\nsummarize(bad=1)\nprint(zzz)")
    assert [p.split(":")[0] for p in problems] == ["1", "2", "2", "3"]


def test_rebinding_a_callable_name_disables_its_schema_check() -> None:
    assert messages("def search(x):\n    return x\nsearch(1)") == []


def test_specs_describe_themselves_for_prompts() -> None:
    spec = SPECS["search"]
    assert isinstance(spec, CallableSpec)
    assert spec.describe()["description"] == "Search the web."
    assert spec.parameters["required"] == ["query"]


def test_checking_after_running_sees_the_plan_as_written() -> None:
    source = "hits = search(query='x')\nprint(f'{len(hits)}')\n[h for h in hits]"
    interpreter = Interpreter({"search": search})
    interpreter.run(source)
    assert interpreter.check(source) == []
    assert interpreter.run(source, check=True).stdout == "5\n"


def test_rejected_constructs_and_check_problems_are_reported_together() -> None:
    problems = messages("import os\nx = serch(query='q')\nprint(nope)")
    assert [p.split(":")[0] for p in problems] == ["1", "2", "3"]
    assert "import of 'os' is not allowed" in problems[0]


def test_a_plan_of_many_unknown_names_is_checked_in_linear_time() -> None:
    # every "did you mean" compares a name with known ones, each pair in quadratic time;
    # similar long names make each comparison as slow as it gets
    stem = "value_of_the_quarterly_report_number_"
    tools = [CallableSpec(f"{stem}tool_{i}") for i in range(10_000)]
    source = "\n".join([*(f"{stem}{i} = {i}" for i in range(300)),
                        *(f"print({stem}x{i})" for i in range(300)),
                        *(f"{stem}call_{i}()" for i in range(100))])
    started = time.monotonic()
    problems = check(source, tools)
    assert time.monotonic() - started < 5.0  # took over a minute when every name was compared
    assert len(problems) == 21  # the first 20, then how many more
    assert problems[0].message.startswith(f"name '{stem}x0' is never assigned; did you mean")
    assert problems[-1].message == "... and 380 more problems"


def test_an_unknown_function_lists_the_first_registered_names_only() -> None:
    tools = [CallableSpec(f"tool_{i:04d}") for i in range(1000)]
    (problem,) = check("nothing()", tools)
    assert problem.message.endswith("tool_0029, ... (970 more))")
