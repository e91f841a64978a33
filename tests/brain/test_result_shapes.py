"""What the planner reads of a tool's result, and how the checker holds plans to it.

The result shape comes from what the tool's author already wrote: the return annotation,
``Tool(output_schema=...)``, an MCP server's ``outputSchema``, the docstring's
``Returns:``; a text tool may show an example of its text.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel, Field

from dcbrain import DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.chain import TFChainInterpreter
from dcbrain.mcp import MCPTools
from dcbrain.tfplan import TFCheckError
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.mcp_servers import SCHEMA_SERVER


class Email(TypedDict):
    id_: str
    """The email's id, assigned by the mail server."""
    sender: str
    subject: str
    received: date


def search_emails(query: str) -> list[Email]:
    """Search the inbox."""
    return [Email(id_="e1", sender="ann@example.com", subject=f"About {query}",
                  received=date(2024, 5, 1))]


@dataclass
class Invoice:
    number: str
    total: Decimal
    """The amount due, tax included."""


def open_invoices() -> dict[str, Invoice]:
    """Open invoices by customer."""
    return {"acme": Invoice("I-7", Decimal("12.50"))}


class Weather(BaseModel):
    city: str
    celsius: float = Field(description="Temperature in degrees Celsius")


def weather(city: str) -> Weather:
    """The weather now."""
    return Weather(city=city, celsius=21.5)


def get_page(url: str) -> str:
    """Fetch a web page."""
    return "<html><body>hello</body></html>"


def lookup_order(order_id: str):  # type: ignore[no-untyped-def]
    """Look an order up.

    Returns:
        dict: the order, with `status` and `eta` (an ISO date).
    """
    return {"status": "shipped", "eta": "2024-05-02"}


def planning_prompt(tools: list[Any]) -> str:
    seen: list[str] = []

    def planner(messages: list[dict[str, Any]]) -> str:
        seen.append(messages[0]["content"])
        return "nothing to do"

    DCBrain(default_llm=FunctionLLM(planner), tools=tools).run("q", conversation_id="c")
    return seen[0].split("## Tools\n")[1].split("\n## ")[0]


def test_a_tool_returning_a_list_of_typeddicts_shows_their_fields() -> None:
    section = planning_prompt([Tool(search_emails, side_effects=False,
                                    trusted_fields=["id_"])])
    assert "search_emails(query: str) -> list[Email]  [read-only; trusted fields: id_]\n" \
        "  Search the inbox." in section
    assert ("Email:\n"
            "  id_: str  # The email's id, assigned by the mail server.\n"
            "  sender: str\n"
            "  subject: str\n"
            "  received: date") in section


def test_dataclass_pydantic_decimal_and_docstring_shapes_reach_the_prompt() -> None:
    section = planning_prompt([open_invoices, weather, lookup_order])
    assert "open_invoices() -> dict[str, Invoice]" in section
    assert "  total: Decimal  # The amount due, tax included." in section
    assert "weather(city: str) -> Weather" in section
    assert "  celsius: float  # Temperature in degrees Celsius" in section
    assert "lookup_order(order_id: str)\n  Look an order up.\n" \
        "  Returns: the order, with `status` and `eta` (an ISO date)." in section


def test_a_text_result_says_it_is_text_and_shows_its_example() -> None:
    section = planning_prompt([Tool(get_page, example="<html>…</html>", side_effects=False)])
    assert section.startswith("Marks: ")
    assert 'get_page(url: str) -> str  [read-only]\n  Fetch a web page.\n' \
        '  Example result: "<html>…</html>"' in section


def test_an_explicit_output_schema_wins_over_the_annotation() -> None:
    schema = {"type": "object", "title": "Page",
              "properties": {"title": {"type": "string", "description": "The <title>"}}}
    section = planning_prompt([Tool(get_page, output_schema=schema,
                                    trusted_args=["url"])])
    assert "get_page(url: str) -> Page  [trusted args: url]" in section
    assert "Page:\n  title: str  # The <title>" in section


def test_tools_without_shapes_keep_a_compact_signature() -> None:
    def add(a: int, b: int = 2):  # type: ignore[no-untyped-def]
        return a + b

    section = planning_prompt([add])
    assert section.strip() == "add(a: int, b: int = 2)"


def test_a_plan_reading_a_missing_field_fails_the_check_at_its_position() -> None:
    interpreter = TFChainInterpreter({}, tools=[search_emails, weather])
    plan_text = ('found = search_emails(query="rent")\n'
                 'senders = [e["from"] for e in found]\n'
                 'w = weather(city="Oslo")\n'
                 'return senders, w["celsius"], w.get("wind")\n')
    with pytest.raises(TFCheckError) as caught:
        interpreter.evaluate(plan_text)
    assert [str(problem) for problem in caught.value.problems] == [
        "2:14: Email from tool 'search_emails' has no field 'from' (its fields: id_, sender, "
        "subject, received)",
        "4:37: Weather from tool 'weather' has no field 'wind' (its fields: city, celsius)",
    ]
    assert interpreter.check('return [e["sender"] for e in search_emails(query="x")]') == []


def test_fields_of_a_list_and_changed_records_are_told_apart() -> None:
    interpreter = TFChainInterpreter({}, tools=[search_emails])
    [problem] = interpreter.check('return search_emails(query="x")["subject"]')
    assert problem.message == ("tool 'search_emails' returns a list (list[Email]): take an item "
                               "(a loop, [0]) before reading its field 'subject'")
    # a record the plan changes in place may hold any key afterwards
    assert interpreter.check('e = search_emails(query="x")[0]\ne["note"] = 1\n'
                             'return e["note"]') == []
    # a name bound twice has no one shape
    assert interpreter.check('e = search_emails(query="x")[0]\ne = {"note": 1}\n'
                             'return e["note"]') == []
    # parallel results keep their shapes
    [problem] = interpreter.check('a, b = parallel(search_emails(query="x"), '
                                  'search_emails(query="y"))\nreturn b[0]["body"]')
    assert problem.line == 2 and "no field 'body'" in problem.message


def test_the_plan_reads_the_fields_it_was_shown() -> None:
    planner = ScriptedLLM([plan('found = search_emails(query="rent")\n'
                                'return [(e["sender"], e["received"].month) for e in found]')])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[search_emails])
    assert brain.run("q", conversation_id="c").final_result == [("ann@example.com", 5)]


def test_an_mcp_tools_output_schema_reaches_the_prompt_and_the_check() -> None:
    output = {"type": "object", "properties": {
        "a": {"type": "string", "description": "What was asked"},
        "n": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}
    tools = MCPTools(command=[sys.executable, str(SCHEMA_SERVER),
                              json.dumps({"type": "object",
                                          "properties": {"a": {"type": "string"}}}),
                              json.dumps(output)], name="shaped")
    with tools:
        section = planning_prompt(list(tools))
        assert "lookup(a: str = ...) -> lookup_result" in section
        assert "lookup_result:\n  a: str  # What was asked\n  n: int" in section
        interpreter = TFChainInterpreter({}, tools=tools)
        [problem] = interpreter.check('return lookup(a="x")["b"]')
        assert problem.message.startswith("the record from tool 'lookup' has no field 'b'")


def test_a_hostile_result_schema_is_written_in_bounded_work() -> None:
    # each definition points at the next eight times: written out, 8**30 parts
    definitions: dict[str, Any] = {
        f"D{i}": {"anyOf": [{"$ref": f"#/$defs/D{i + 1}"},
                            {"type": "array", "items": {"$ref": f"#/$defs/D{i + 1}"}}] * 4}
        for i in range(30)}
    definitions["D30"] = {"type": "object", "properties": {"a": {"$ref": "#/$defs/D0"}}}
    fan_out = {"$defs": definitions, "$ref": "#/$defs/D0"}
    loop = {"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}
    tools = [Tool(get_page, name="fan_out", output_schema=fan_out),
             Tool(get_page, name="loop", output_schema=loop)]
    section = planning_prompt(tools)
    assert len(section) < 5_000
    assert "loop(url: str) -> Any" in section
    interpreter = TFChainInterpreter({}, tools=tools)
    assert interpreter.check('x = loop(url="u")\ny = x\ny.append(x)\nreturn x["a"]["b"], '
                             'fan_out(url="u")["a"]') == []
