"""The chains and tools as the planner reads them: one Python-like signature each.

``search_emails(query: str, sender: str | None = None) -> list[Email]  [read-only]``,
then its description, its parameters' descriptions, what it returns (a docstring's
``Returns:``, an example result), and the records its results hold, each defined once
with its fields' descriptions. Trust declarations are marks on the signature line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dcbrain.tfplan.shapes import ShapeWriter, python_literal, short_description

#: Characters of an example result shown.
MAX_EXAMPLE = 300

#: What the marks mean, said once above the tools when any has one.
LEGEND = ("Marks: [read-only] changes nothing; [trusted args: a] a may only carry the "
          "user's words, the plan's literals or trusted results; [trusted result] / "
          "[trusted fields: f] that result / those fields of its records are trusted data.")
RECORDS_HEADING = 'Records (dicts: read a field as r["field"]):'


def describe_callables(items: Sequence[Mapping[str, Any]], writer: ShapeWriter) -> str:
    """The signatures of ``items`` (``describe_callables()`` entries), one block each;
    records they name go to ``writer``. ``(none)`` without items."""
    if not items:
        return "(none)"
    blocks = [_callable(item, writer) for item in items]
    if any(_marks(item) for item in items):
        blocks.insert(0, LEGEND)
    return "\n".join(blocks)


def records_section(writer: ShapeWriter) -> str:
    """The records the described callables named, after a heading (empty: none)."""
    records = writer.records_text()
    return f"\n\n{RECORDS_HEADING}\n{records}" if records else ""


def _callable(item: Mapping[str, Any], writer: ShapeWriter) -> str:
    name = str(item.get("name", ""))
    parameters = item.get("input_schema")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = parameters.get("required")
    required = set(required) if isinstance(required, list) else set()
    arguments: list[str] = []
    notes: list[str] = []
    for argument, schema in properties.items():
        text = writer.type_text(schema, parameters, f"{name}_{argument}")
        if argument in required:
            arguments.append(f"{argument}: {text}")
        elif isinstance(schema, Mapping) and "default" in schema:
            arguments.append(f"{argument}: {text} = {_value(schema['default'], 40)}")
        else:
            arguments.append(f"{argument}: {text} = ...")
        description = schema.get("description") if isinstance(schema, Mapping) else None
        if isinstance(description, str) and description.strip():
            notes.append(f"  {argument}: {short_description(description)}")
    line = f"{name}({', '.join(arguments)})"
    returns = item.get("output_schema")
    if isinstance(returns, Mapping) and returns:
        hint = "" if isinstance(returns.get("title"), str) else f"{name}_result"
        line += f" -> {writer.type_text(returns, returns, hint)}"
    marks = _marks(item)
    if marks:
        line += f"  [{'; '.join(marks)}]"
    lines = [line]
    description = str(item.get("description") or "").strip()
    if description:
        lines += [f"  {text}" for text in description.splitlines() if text.strip()]
    lines += notes
    returns_doc = item.get("returns_doc")
    if isinstance(returns_doc, str) and returns_doc.strip():
        lines.append(f"  Returns: {short_description(returns_doc)}")
    if item.get("example") is not None:
        lines.append(f"  Example result: {_value(item['example'], MAX_EXAMPLE)}")
    return "\n".join(lines)


def _marks(item: Mapping[str, Any]) -> list[str]:
    marks: list[str] = []
    if item.get("kind") == "chain":
        return marks
    if item.get("side_effects") is False:
        marks.append("read-only")
    if item.get("trusted_output") is True:
        marks.append("trusted result")
    for key, label in (("trusted_args", "trusted args"), ("trusted_fields", "trusted fields")):
        names = item.get(key)
        if names:
            marks.append(f"{label}: {', '.join(sorted(str(name) for name in names))}")
    return marks


def _value(value: Any, limit: int) -> str:
    return python_literal(value, limit)
