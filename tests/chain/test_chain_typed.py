"""Typed chains and tools: output_type, keyword runs, rich tool results as plain data."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json

import pytest
from pydantic import BaseModel, Field, field_validator
from typing_extensions import TypedDict

from dcbrain import Chain, ScriptedLLM, TFChainInterpreter, ToolCall
from dcbrain.exceptions import TFChainError, TFToolError
from dcbrain.tools import SchemaTool, Tool
from dcbrain.values.jsonsafe import dumps


class Quote(BaseModel):
    author: str
    text: str
    year: int = Field(ge=0, description="year it was said")

    @field_validator("author")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("author must be capitalised")
        return value


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Order(TypedDict):
    sku: str
    count: int


class Invoice(BaseModel):
    total: decimal.Decimal
    due: datetime.date
    colour: Colour
    at: Point


def quote_chain(llm: ScriptedLLM, **kwargs: object) -> Chain:
    return Chain(name="quote", llm=llm, prompt="A quote about {{ topic }}", output_type=Quote,
                 **kwargs)  # type: ignore[arg-type]


def test_output_type_derives_the_schema_and_returns_an_instance() -> None:
    llm = ScriptedLLM([{"author": "Ada", "text": "t", "year": 1843}])
    chain = quote_chain(llm)
    assert chain.output_json_schema is not None
    assert chain.output_json_schema["required"] == ["author", "text", "year"]
    assert chain.describe()["output_schema"]["properties"]["year"]["minimum"] == 0
    result = chain.run(topic="engines")
    assert result.output == Quote(author="Ada", text="t", year=1843)
    assert result.content == {"author": "Ada", "text": "t", "year": 1843}
    assert llm.requests[0].json_schema == chain.output_json_schema


def test_a_model_validator_error_is_sent_back_once_then_fails() -> None:
    llm = ScriptedLLM([{"author": "ada", "text": "t", "year": 1},
                       {"author": "Ada", "text": "t", "year": 2}])
    result = quote_chain(llm).run(topic="x")
    assert result.output.year == 2
    assert "author must be capitalised" in llm.calls[1][-1]["content"]

    llm = ScriptedLLM([{"author": "ada", "text": "t", "year": 1}] * 2)
    with pytest.raises(TFChainError, match=r"matching output_type .*author must be capitalised"):
        quote_chain(llm).run(topic="x")


def test_non_object_output_types_are_wrapped_with_their_definitions_at_the_root() -> None:
    llm = ScriptedLLM([{"result": [{"author": "A", "text": "t", "year": 1}]}])
    chain = Chain(name="quotes", llm=llm, output_type=list[Quote])
    schema = chain.output_schema
    assert schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Quote"}
    assert "Quote" in schema["$defs"]
    result = chain.run("x")
    assert result.output == [Quote(author="A", text="t", year=1)]
    assert result.content == {"result": [{"author": "A", "text": "t", "year": 1}]}


def test_output_type_and_output_json_schema_exclude_each_other() -> None:
    with pytest.raises(TFChainError, match="not both"):
        Chain(name="q", llm=ScriptedLLM([]), output_type=Quote,
              output_json_schema={"type": "object"})


def test_plans_see_plain_data_from_typed_chains() -> None:
    llm = ScriptedLLM([{"author": "Ada", "text": "t", "year": 1843}])
    interpreter = TFChainInterpreter({"quote": quote_chain(llm)})
    result = interpreter.evaluate('q = quote(topic="x")\nreturn q["author"] + str(q["year"])')
    assert result.value == "Ada1843"


async def test_keyword_runs_fill_the_templates() -> None:
    llm = ScriptedLLM(["one", "two", "three"])
    chain = Chain(name="t", llm=llm, prompt="Translate {{ text }} into {{ lang }}")
    assert chain.run(text="hello", lang="French").content == "one"
    assert (await chain.async_run(text="hi", lang="German")).content == "two"
    assert [call[-1]["content"] for call in llm.calls] == [
        "Translate hello into French", "Translate hi into German"]
    result = chain.run("ignored text", text="bye", lang="Dutch")
    assert result.origin is not None and result.origin.content == "ignored text"
    assert llm.calls[-1][-1]["content"] == "Translate bye into Dutch"


def test_a_keyword_run_without_input_uses_the_arguments_as_text() -> None:
    llm = ScriptedLLM(["ok", "ok"])
    chain = Chain(name="echo", llm=llm)
    chain.run(topic="x", n=2)
    chain.run(input="plain")
    assert [call[-1]["content"] for call in llm.calls] == ['{"topic": "x", "n": 2}', "plain"]


def test_tools_return_models_dataclasses_enums_as_plain_data_keeping_dates_and_decimals(
) -> None:
    def invoice(order: Order) -> Invoice:
        """Invoice an order."""
        return Invoice(total=decimal.Decimal("12.50") * order["count"],
                       due=datetime.date(2026, 1, 31), colour=Colour.RED, at=Point(1, 2))

    def points() -> list[Point]:
        return [Point(1, 2)]

    tool = Tool(invoice)
    plain = tool.call(order={"sku": "a", "count": 2})
    assert plain == {"total": decimal.Decimal("25.00"), "due": datetime.date(2026, 1, 31),
                     "colour": "red", "at": {"x": 1, "y": 2}}
    assert json.loads(dumps(plain)) == {"total": "25.00", "due": "2026-01-31", "colour": "red",
                                        "at": {"x": 1, "y": 2}}  # text only at the edge
    assert Tool(points).call() == [{"x": 1, "y": 2}]
    assert tool.returns_schema is not None
    assert tool.returns_schema["properties"]["due"] == {"format": "date", "title": "Due",
                                                        "type": "string"}
    assert tool.returns_schema["properties"]["total"] == {"format": "decimal",
                                                          "title": "Total", "type": "string"}


def test_tool_argument_schemas_keep_model_definitions_at_the_root() -> None:
    def place(order: Order, at: Point, colour: Colour = Colour.RED) -> str:
        return "ok"

    schema = Tool(place).parameters_schema
    assert schema["properties"]["order"] == {"$ref": "#/$defs/Order"}
    assert schema["properties"]["at"] == {"$ref": "#/$defs/Point"}
    assert set(schema["$defs"]) == {"Order", "Point", "Colour"}
    assert schema["required"] == ["order", "at"]
    assert Tool(place).call(order={"sku": "a", "count": 1}, at={"x": 0, "y": 0}) == "ok"


def test_a_result_that_is_no_data_still_fails_clearly() -> None:
    class Opaque:
        pass

    def opaque() -> dict[str, object]:
        return {"a": [Opaque()]}

    with pytest.raises(TFToolError, match=r"tool 'opaque' result: Opaque is not JSON-like data"):
        Tool(opaque).call()


async def test_a_chain_calls_a_tool_that_returns_a_model() -> None:
    def invoice() -> Invoice:
        """Invoice."""
        return Invoice(total=decimal.Decimal("1.5"), due=datetime.date(2026, 1, 1),
                       colour=Colour.RED, at=Point(0, 0))

    llm = ScriptedLLM([ToolCall("c1", "invoice", {}), "done"])
    result = await Chain(name="c", llm=llm, tools=[invoice]).async_run("go")
    assert result.tool_returns[0]["result"]["total"] == decimal.Decimal("1.5")
    assert json.loads(llm.calls[1][-1]["content"])["due"] == "2026-01-01"


async def test_schema_tools_check_values_and_close_unknown_arguments() -> None:
    async def area(**kwargs: int) -> int:
        return kwargs["w"] * kwargs.get("h", 1)

    tool = SchemaTool(area, name="area", closed=True, parameters_schema={
        "type": "object", "properties": {"w": {"type": "integer"}, "h": {"type": "integer"}},
        "required": ["w"]})
    assert str(tool.signature) == "(*, w, h=None)"
    assert await tool.acall(w=2, h=3) == 6
    with pytest.raises(TFToolError, match="argument 'w': 'x' is not of type 'integer'"):
        await tool.acall(w="x")
    with pytest.raises(TFToolError, match="unexpected keyword argument 'd'"):
        await tool.acall(w=1, d=2)
    assert tool.call(w=4) == 4


async def test_a_chain_is_a_tool_of_another_chain() -> None:
    inner_llm = ScriptedLLM([{"author": "Ada", "text": "t", "year": 1}])
    inner = quote_chain(inner_llm, description="Find a quote")
    outer_llm = ScriptedLLM([ToolCall("c1", "quote", {"topic": "math"}), "Ada said t"])
    result = await Chain(name="writer", llm=outer_llm, tools=[inner]).async_run("write")
    assert result.tool_returns[0]["result"] == {"author": "Ada", "text": "t", "year": 1}
    offered = outer_llm.requests[0].tools
    assert offered is not None and offered[0]["function"]["name"] == "quote"
    assert offered[0]["function"]["parameters"]["required"] == ["topic"]


def test_containers_carry_the_typed_output_of_their_last_chain() -> None:
    from dcbrain import SeqChains

    first = Chain(name="first", llm=ScriptedLLM(["draft"]))
    second = quote_chain(ScriptedLLM([{"author": "Ada", "text": "t", "year": 1}]))
    result = SeqChains([first, second]).run(topic="x")
    assert result.output == Quote(author="Ada", text="t", year=1)
    assert Chain(name="plain", llm=ScriptedLLM(["hi"])).run("x").output == "hi"


def test_a_collection_of_tools_must_be_unpacked() -> None:
    from dcbrain.tools import as_tool

    with pytest.raises(TypeError, match=r"goes in unpacked: tools=\[\*mcp_tools"):
        as_tool([])  # type: ignore[arg-type]


def test_tools_of_one_function_share_its_validator_but_not_their_schemas() -> None:
    def move(x: int, steps: int = 1) -> int:
        """Move along a line."""
        return x + steps

    first, second = Tool(move), Tool(move, name="step")
    assert first._validated is second._validated  # built once per function
    assert first.parameters_schema == second.parameters_schema
    first.parameters_schema["properties"]["steps"]["default"] = 99  # a caller's own copy
    assert second.parameters_schema["properties"]["steps"]["default"] == 1
    assert Tool(move).parameters_schema["properties"]["steps"]["default"] == 1
    with pytest.raises(TFToolError, match="'x'"):
        second.call(x="not a number")
    assert second.call(x=1, steps=2) == 3
