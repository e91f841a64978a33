"""The static check: all problems of a plan, before it runs, with positions."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel

from dcbrain.tfplan import CallableSpec, Interpreter, check
from dcbrain.tools import Tool


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


class OrderLine(BaseModel):
    sku: str
    quantity: int


def lookup_order(order_id: str, amount: float = 0.0, count: int = 1, express: bool = False,
                 note: str | None = None, tags: list[str] | None = None,
                 line: OrderLine | None = None, when: datetime | None = None) -> str:
    """Look an order up."""
    return order_id


def literal_problems(source: str) -> list[str]:
    specs = Interpreter(tools=[Tool(lookup_order)]).specs
    return [f"{p.line}:{p.col}: {p.message}" for p in check(source, specs)]


def test_a_literal_of_a_type_the_tool_refuses_is_reported_at_the_argument() -> None:
    assert literal_problems("x = 1\nlookup_order(order_id=1001)") == [
        "2:23: tool 'lookup_order' argument 'order_id' must be str, not int"]
    assert literal_problems('lookup_order("A-1", count="many", tags="a", note=[1])') == [
        "1:40: tool 'lookup_order' argument 'tags' must be list or None, not str",
        "1:50: tool 'lookup_order' argument 'note' must be str or None, not list"]
    assert literal_problems("lookup_order(None)") == [
        "1:14: tool 'lookup_order' argument 'order_id' must be str, not None"]


def test_literals_the_call_would_accept_are_not_reported() -> None:
    accepted = [
        'lookup_order(order_id="A-1001", amount=3, count=2.0, express=1, note=None)',
        'lookup_order(order_id=f"A-{1}", amount=-2.5, count=True, tags=["a"])',
        'lookup_order("A-1", count="3", amount="1.5", express="yes", when=1700000000)',
        'lookup_order(order_id="A-1", line={"sku": "x", "quantity": 1}, tags=("a",))',
        'order_id = 1001\nlookup_order(order_id=order_id)',  # not a literal: the run decides
        'lookup_order(*[1001])',
    ]
    for source in accepted:
        problems = [p for p in literal_problems(source) if "must be" in p]
        assert problems == [], source


def test_chains_and_plain_functions_are_not_judged_by_their_schema() -> None:
    def plain(order_id: str) -> str:  # called as it is: nothing validates the argument
        return str(order_id)

    specs = Interpreter({"plain": plain, "summarize": FakeChain()}).specs
    assert check("plain(order_id=1001)\nsummarize(text=3)", specs) == []
