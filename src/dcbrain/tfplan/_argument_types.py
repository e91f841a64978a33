"""Literal arguments whose type a chain or tool's schema refuses, found before the run.

Only literals whose type is certain are judged (``1001``, ``"A-1001"``, ``None``, ``[...]``,
``{...}``, an f-string), and only against a schema that names its types. Everything a
call's validation would still accept counts as accepted: an int for a ``number``, a bool
or a whole float for an ``integer``, a number for a ``string`` with a ``format`` (a date
may be given as a timestamp), a string for a number or a boolean (``"42"`` converts).
"""

from __future__ import annotations

import ast
from typing import Any

#: The Python name of each JSON Schema type, as the planner writes the values.
_PYTHON_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
                 "array": "list", "object": "dict", "null": "None"}


def literal_mismatch(value: ast.expr, schema: Any) -> str | None:
    """``"str, not int"`` when the literal ``value`` can never satisfy ``schema``;
    ``None`` when it may (or when either says too little to be sure)."""
    literal = _literal(value)
    if literal is None:
        return None
    allowed = _schema_types(schema)
    if allowed is None:
        return None
    kind, python_value = literal
    if any(_accepts(json_type, formatted, kind, python_value)
           for json_type, formatted in allowed):
        return None
    expected = " or ".join(dict.fromkeys(_PYTHON_NAMES.get(json_type, json_type)
                                         for json_type, _ in allowed))
    return f"{expected}, not {kind}"


def _literal(node: ast.expr) -> tuple[str, Any] | None:
    """The Python type name and value of a literal argument; ``None`` if not a literal."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd) \
            and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        node = node.operand
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            return "None", None
        if type(value) in (str, int, float, bool):
            return type(value).__name__, value
        return None
    if isinstance(node, ast.JoinedStr):
        return "str", None
    if isinstance(node, ast.List | ast.Tuple):
        return type(node).__name__.lower(), None
    if isinstance(node, ast.Dict):
        return "dict", None
    return None


def _schema_types(schema: Any) -> list[tuple[str, bool]] | None:
    """``(type, has a format)`` for every type ``schema`` allows; ``None`` when it does
    not say (no ``type``, a ``$ref``, ``allOf``, a branch of a union that does not say)."""
    if not isinstance(schema, dict):
        return None
    declared = schema.get("type")
    if isinstance(declared, str | list) and "$ref" not in schema:
        names = [declared] if isinstance(declared, str) else declared
        if all(isinstance(name, str) for name in names):
            return [(name, "format" in schema) for name in names]
        return None
    branches = schema.get("anyOf", schema.get("oneOf"))
    if not isinstance(branches, list) or "type" in schema or "$ref" in schema:
        return None
    allowed: list[tuple[str, bool]] = []
    for branch in branches:
        types = _schema_types(branch)
        if types is None:
            return None
        allowed.extend(types)
    return allowed


def _accepts(json_type: str, formatted: bool, kind: str, value: Any) -> bool:
    if kind == "str":
        return json_type in ("string", "integer", "number", "boolean")
    if kind == "bool":
        return json_type in ("boolean", "integer", "number")
    if kind == "int":
        return json_type in ("integer", "number") or (json_type == "string" and formatted) \
            or (json_type == "boolean" and value in (0, 1))
    if kind == "float":
        return json_type == "number" or (json_type == "string" and formatted) \
            or (json_type == "integer" and float(value).is_integer())
    if kind == "None":
        return json_type == "null"
    if kind in ("list", "tuple"):
        return json_type == "array"
    return json_type == "object"  # a dict display
