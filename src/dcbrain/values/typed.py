"""Python types as output types: their pydantic adapter, JSON Schema and readable errors.

Shared by chains (``Chain(output_type=...)``) and brains (``DCBrain(output_type=...)``),
so a type is accepted, described to the LLM and complained about the same way in both.
"""

from __future__ import annotations

from typing import Any, ForwardRef

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

#: Validation errors listed in a message (the planner or LLM reads it).
ERRORS_SHOWN = 5


def output_adapter(output_type: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    """The adapter of ``output_type`` and its JSON Schema (a top-level ``$ref`` inlined).

    Raises :class:`TypeError` naming what is wrong when the type is unusable.
    """
    if isinstance(output_type, str | ForwardRef):
        # pydantic would evaluate it as Python: a type is an object, never text
        raise TypeError(f"output_type must be a type, not the string {str(output_type)[:80]!r}")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as exc:
        raise TypeError(f"output_type {output_type!r} has no JSON Schema: {exc}") from None
    reference = schema.get("$ref")
    definitions = schema.get("$defs", {})
    if isinstance(reference, str) and reference.startswith("#/$defs/") and len(schema) == 2:
        target = definitions[reference.removeprefix("#/$defs/")]
        schema = {**target, "$defs": definitions}
    return adapter, schema


def validation_errors(exc: PydanticValidationError) -> str:
    """The first errors of ``exc`` as ``location: message``, separated by ``; ``."""
    return "; ".join(
        (f"{'/'.join(str(part) for part in error['loc'])}: {error['msg']}"
         if error["loc"] else error["msg"])
        for error in exc.errors()[:ERRORS_SHOWN]
    )
