"""What a :class:`~dcbrain.tools.Tool` derives from its Python function.

Its signature, its pydantic-validated form, the JSON Schemas of its keyword arguments and
of its result (as the planner reads them: :class:`PlanJsonSchema`), and its docstring's
summary; remembered per function, since building them takes milliseconds.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ConfigDict, TypeAdapter, validate_call
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from dcbrain._docstrings import docstring_parts
from dcbrain.exceptions import TFToolError


class PlanJsonSchema(GenerateJsonSchema):
    """JSON schemas as the planner should read them: a Decimal is a string of format
    ``decimal`` (a plan holds it as a Decimal; pydantic also accepts a number for it)."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        return {"type": "string", "format": "decimal"}


_Derived = tuple[inspect.Signature, Callable[..., Any], dict[str, Any], dict[str, Any] | None,
                 str]
#: What a tool derives from its function (pydantic validators and schemas take milliseconds
#: to build), per function: a worker builds a brain, and its tools, for every run.
_DERIVED: weakref.WeakKeyDictionary[Callable[..., Any], _Derived] = weakref.WeakKeyDictionary()
_DERIVED_LOCK = threading.Lock()


def derived_from(func: Callable[..., Any]) -> _Derived:
    """``func``'s signature, validated form, arguments and result schemas, and summary."""
    try:
        with _DERIVED_LOCK:
            found = _DERIVED.get(func)
    except TypeError:  # not weakly referable, or unhashable: nothing to remember it by
        found = None
    if found is not None:
        return found
    signature = inspect.signature(func)
    documented = docstring_parts(func.__doc__)
    # first: a parameter without a schema is named before pydantic's own error
    arguments = _arguments_schema(signature, func, documented.parameters)
    validated = validate_call(config=ConfigDict(arbitrary_types_allowed=False))(func)
    derived = (signature, validated, arguments, _returns_schema(func), documented.summary)
    with contextlib.suppress(TypeError), _DERIVED_LOCK:
        _DERIVED[func] = derived
    return derived


def _arguments_schema(signature: inspect.Signature, func: Callable[..., Any],
                      documented: Mapping[str, str]) -> dict[str, Any]:
    """The JSON Schema of ``func``'s keyword arguments; a parameter ``documented`` in the
    docstring gets that description unless its annotation gives one."""
    hints = _type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    adapters: list[tuple[str, Any, TypeAdapter[Any]]] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            adapter.json_schema()
        except Exception as exc:
            # An empty schema would tell the planner (and the checker) "anything goes".
            raise TFToolError(
                f"tool function {getattr(func, '__qualname__', func)!r}: parameter {name!r}: "
                f"no JSON schema for its annotation {_annotation_text(annotation)} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0]}); annotate it with a "
                "type pydantic can describe (a model, a TypedDict, str, int, ...)"
            ) from exc
        adapters.append((name, "validation", adapter))
    # one generation for all parameters, so models they share live once under "$defs"
    schemas, definitions = TypeAdapter.json_schemas(adapters, ref_template="#/$defs/{model}",
                                                    schema_generator=PlanJsonSchema)
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = dict(schemas.get((name, "validation"), {}))
        if param.default is not param.empty:
            try:
                TypeAdapter(Any).dump_python(param.default, mode="json")
                schema = {**schema, "default": param.default}
            except Exception:
                pass
        else:
            required.append(name)
        if name in documented and "description" not in schema:
            schema["description"] = documented[name]
        properties[name] = schema
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema_out["required"] = required
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    schema_out["additionalProperties"] = has_var_kw
    if definitions.get("$defs"):
        schema_out["$defs"] = definitions["$defs"]
    return schema_out


def _annotation_text(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def _returns_schema(func: Callable[..., Any]) -> dict[str, Any] | None:
    """The schema of the result as the plan sees it (after the JSON dump)."""
    annotation = _type_hints(func).get("return", inspect.Signature.empty)
    if annotation is inspect.Signature.empty:
        return None
    try:
        return TypeAdapter(annotation).json_schema(mode="serialization",
                                                   schema_generator=PlanJsonSchema)
    except Exception:
        return None


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        # with Annotated kept, a Field's description and constraints reach the schema
        return typing.get_type_hints(func, include_extras=True)
    except Exception:
        return {}
