"""Result shapes: what a JSON Schema says a value holds, read the way a plan reads it.

A chain's or tool's ``returns`` schema is one :class:`Shape`: records (objects with
``properties``) have fields, lists have items, ``$ref`` points into the schema's own
``$defs``. The checker asks a shape for a field a plan reads; :class:`ShapeWriter` writes
shapes as Python-like type text for the planner (``list[Email]``, with ``Email`` written
once, field by field, with its descriptions). Both bound their work: a schema is data a
server sent, and may be deep, wide or cyclic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: ``$ref`` hops followed before a shape counts as unknown (a cycle of refs ends here).
MAX_REF_HOPS = 16
#: Nesting written out before a type is written as ``dict`` / ``list``.
MAX_DEPTH = 6
#: Records one writer defines, and fields one record lists.
MAX_RECORDS = 60
MAX_FIELDS = 60
#: Alternatives of a union and values of an enum written out.
MAX_ALTERNATIVES = 8
MAX_ENUM = 12
#: Schema parts one writer looks at before writing ``Any`` for the rest.
MAX_WORK = 20_000
#: Characters of a description (its first line) and of one type's text.
MAX_DESCRIPTION = 200
MAX_TYPE_TEXT = 300

#: String formats that are plan values of their own.
STRING_FORMATS = {"date": "date", "date-time": "datetime", "time": "time",
                  "duration": "timedelta", "decimal": "Decimal"}
_SIMPLE = {"integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_REF = re.compile(r"^#/(\$defs|definitions)/([^/]+)$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Shape:
    """A part of a result schema (``schema``), with the whole schema (``root``) its
    ``$ref``s point into; ``name`` is the record's name when it has one."""

    schema: Mapping[str, Any]
    root: Mapping[str, Any]
    name: str = ""

    @classmethod
    def of(cls, schema: Any) -> Shape | None:
        """The shape of a returns schema; ``None`` when it says nothing."""
        if not isinstance(schema, Mapping) or not schema:
            return None
        return cls(schema, schema).resolved()

    def resolved(self) -> Shape | None:
        """This shape with its ``$ref``s followed and ``X | None`` taken as ``X``."""
        shape: Shape | None = self
        for _ in range(MAX_REF_HOPS):
            if shape is None:
                return None
            schema = shape.schema
            ref = schema.get("$ref")
            if isinstance(ref, str):
                target, name = resolve_ref(ref, self.root)
                shape = None if target is None else Shape(target, self.root, name)
                continue
            alternatives = schema.get("anyOf") or schema.get("oneOf")
            if isinstance(alternatives, list):
                real = [item for item in alternatives
                        if not (isinstance(item, Mapping) and item.get("type") == "null")]
                if len(real) != 1 or not isinstance(real[0], Mapping):
                    return shape
                shape = Shape(real[0], self.root, shape.name)
                continue
            every = schema.get("allOf")
            if isinstance(every, list) and len(every) == 1 and isinstance(every[0], Mapping):
                shape = Shape(every[0], self.root, shape.name)
                continue
            return shape
        return None

    @property
    def is_list(self) -> bool:
        return self.schema.get("type") == "array"

    def fields(self) -> dict[str, Any] | None:
        """The fields of a closed record (one that holds these keys and no other), else
        ``None``: an open object, a union, or not a record."""
        schema = self.schema
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return None
        if schema.get("type", "object") != "object" or "patternProperties" in schema:
            return None
        if any(key in schema for key in ("anyOf", "oneOf", "allOf", "$ref")):
            return None
        extra = schema.get("additionalProperties", False)
        if extra is not False:
            return None
        return dict(properties)

    def field(self, name: str) -> Shape | None:
        """The shape of field ``name`` (``None``: unknown, or no such field)."""
        schema = self.schema
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
            return Shape(properties[name], self.root).resolved()
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return Shape(extra, self.root).resolved()
        return None

    def items(self) -> Shape | None:
        """The shape of a list's items, or of a ``dict[str, X]``'s values."""
        schema = self.schema
        items = schema.get("items")
        if self.is_list and isinstance(items, Mapping) and items:
            return Shape(items, self.root).resolved()
        if not self.is_list:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra and "properties" not in schema:
                return Shape(extra, self.root).resolved()
        return None

    def text(self) -> str:
        """The shape as the planner reads it (``list[Email]``)."""
        return ShapeWriter().type_text(self.schema, self.root)


def resolve_ref(ref: str, root: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    """The schema a local ``$ref`` (``#/$defs/Email``) names in ``root``, and its name."""
    match = _REF.match(ref)
    if match is None:
        return None, ""
    definitions = root.get(match.group(1))
    target = definitions.get(match.group(2)) if isinstance(definitions, Mapping) else None
    return (target, match.group(2)) if isinstance(target, Mapping) else (None, "")


class ShapeWriter:
    """Writes schemas as type text; the records they name are defined once, in
    :meth:`records_text`, whoever mentions them first."""

    def __init__(self) -> None:
        self._records: dict[str, list[str]] = {}
        self._keys: dict[str, str] = {}  # record name -> its schema's JSON, to tell twins apart
        self._work = 0  # schema parts written: $refs make a small schema a large tree

    def type_text(self, schema: Any, root: Mapping[str, Any], hint: str = "",
                  depth: int = 0) -> str:
        """``schema`` as a type: ``str``, ``list[Email]``, ``"a" | "b"``, ``dict[str, int]``;
        ``hint`` names a record that has no name of its own."""
        text = self._type(schema, root, hint, depth)
        return text if len(text) <= MAX_TYPE_TEXT else text[:MAX_TYPE_TEXT] + "…"

    def _type(self, schema: Any, root: Mapping[str, Any], hint: str, depth: int) -> str:
        self._work += 1
        if not isinstance(schema, Mapping) or not schema or self._work > MAX_WORK:
            return "Any"
        if depth > MAX_DEPTH:
            return "dict" if "properties" in schema else "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target, name = resolve_ref(ref, root)
            if target is None:
                return "Any"
            return self._type(target, root, name, depth + 1) if "properties" not in target \
                else self._record(target, root, name, depth)
        if "const" in schema:
            return _literal(schema["const"])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            shown = " | ".join(_literal(value) for value in enum[:MAX_ENUM])
            return shown + (" | …" if len(enum) > MAX_ENUM else "")
        for key in ("anyOf", "oneOf"):
            alternatives = schema.get(key)
            if isinstance(alternatives, list) and alternatives:
                parts = [self._type(item, root, hint, depth + 1)
                         for item in alternatives[:MAX_ALTERNATIVES]]
                return " | ".join(dict.fromkeys(parts))
        every = schema.get("allOf")
        if isinstance(every, list) and every:
            return self._type(every[0], root, hint, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            return " | ".join(dict.fromkeys(
                self._type({**schema, "type": item}, root, hint, depth + 1)
                for item in kind[:MAX_ALTERNATIVES] if isinstance(item, str))) or "Any"
        if kind == "string":
            string_format = schema.get("format")
            return STRING_FORMATS.get(string_format, "str") \
                if isinstance(string_format, str) else "str"
        if kind in _SIMPLE:
            return _SIMPLE[str(kind)]
        if kind == "array" or (kind is None and "items" in schema):
            items = schema.get("items")
            if isinstance(items, Mapping) and items:
                return f"list[{self._type(items, root, _item_hint(hint), depth + 1)}]"
            return "list"
        if kind in ("object", None):
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties:
                return self._record(schema, root, hint, depth)
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return f"dict[str, {self._type(extra, root, _item_hint(hint), depth + 1)}]"
            return "dict" if kind == "object" else "Any"
        return "Any"

    def _record(self, schema: Mapping[str, Any], root: Mapping[str, Any], hint: str,
                depth: int) -> str:
        title = schema.get("title")
        name = hint or (title if isinstance(title, str) else "") or "Record"
        name = re.sub(r"\W+", "_", name).strip("_") or "Record"
        if not _IDENTIFIER.match(name):
            name = f"R_{name}"
        key = json.dumps({k: v for k, v in schema.items() if k not in ("$defs", "definitions")},
                         sort_keys=True, default=str)[:20_000]
        base, number = name, 1
        while name in self._keys and self._keys[name] != key:
            number += 1
            name = f"{base}{number}"
        if name in self._keys or len(self._records) >= MAX_RECORDS:
            return name if name in self._keys else "dict"
        self._keys[name] = key
        lines: list[str] = []
        self._records[name] = lines  # before its fields: a record may contain itself
        properties = schema["properties"]
        for field_name, field_schema in list(properties.items())[:MAX_FIELDS]:
            text = self._type(field_schema, root, f"{name}_{field_name}", depth + 1)
            description = field_schema.get("description") \
                if isinstance(field_schema, Mapping) else None
            lines.append(f"  {field_name}: {text}" + (
                f"  # {short_description(description)}" if isinstance(description, str)
                and description.strip() else ""))
        if len(properties) > MAX_FIELDS:
            lines.append(f"  … ({len(properties) - MAX_FIELDS} more fields)")
        extra = schema.get("additionalProperties", False)
        if extra is not False:
            lines.append("  … (other keys too)")
        return name

    def records_text(self) -> str:
        """Every record named so far, field by field."""
        return "\n".join(f"{name}:\n" + "\n".join(lines)
                         for name, lines in self._records.items())


def short_description(text: str) -> str:
    """A description on one line, cut to :data:`MAX_DESCRIPTION` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_DESCRIPTION else flat[:MAX_DESCRIPTION] + "…"


def _literal(value: Any) -> str:
    return python_literal(value, 60)


def python_literal(value: Any, limit: int) -> str:
    """JSON data as a Python literal (``None``, ``True``, ``"text"``, ``[1, 2]``), cut to
    ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if value is None or isinstance(value, bool):
        text = repr(value)
    elif isinstance(value, list | dict) and text:
        text = re.sub(r'("(?:[^"\\]|\\.)*")|\b(null|true|false)\b',
                      lambda match: match.group(1) or _JSON_WORDS[str(match.group(2))], text)
    return text if len(text) <= limit else text[:limit] + "…"


_JSON_WORDS = {"null": "None", "true": "True", "false": "False"}


def _item_hint(hint: str) -> str:
    return f"{hint}_item" if hint else ""
