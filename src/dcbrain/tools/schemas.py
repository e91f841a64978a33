"""What a :class:`~dcbrain.tools.Tool` derives from its Python function.

Its signature, its pydantic-validated form, the JSON Schemas of its keyword arguments and
of its result (as the planner reads them: :class:`PlanJsonSchema`; a TypedDict's or
dataclass's field docstrings become descriptions), and its docstring's summary and
``Returns:``; remembered per function, since building them takes milliseconds.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import inspect
import itertools
import textwrap
import threading
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import typing_extensions
from pydantic import ConfigDict, TypeAdapter, validate_call
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from dcbrain.exceptions import TFToolError
from dcbrain.tools.docstrings import DocstringParts, docstring_parts


class PlanJsonSchema(GenerateJsonSchema):
    """JSON schemas as the planner should read them: a Decimal is a string of format
    ``decimal`` (a plan holds it as a Decimal; pydantic also accepts a number for it)."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        return {"type": "string", "format": "decimal"}


_Derived = tuple[inspect.Signature, Callable[..., Any], dict[str, Any], dict[str, Any] | None,
                 DocstringParts]
#: What a tool derives from its function (pydantic validators and schemas take milliseconds
#: to build), per function: a worker builds a brain, and its tools, for every run.
_DERIVED: weakref.WeakKeyDictionary[Callable[..., Any], _Derived] = weakref.WeakKeyDictionary()
_DERIVED_LOCK = threading.Lock()


def derived_from(func: Callable[..., Any]) -> _Derived:
    """``func``'s signature, validated form, arguments and result schemas, and what its
    docstring says."""
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
    derived = (signature, validated, arguments, _returns_schema(func), documented)
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
    """The schema of the result as the plan sees it (after the JSON dump), with the
    field docstrings of the records it holds as their descriptions."""
    annotation = _type_hints(func).get("return", inspect.Signature.empty)
    if annotation is inspect.Signature.empty or annotation is None:
        return None
    records: dict[str, dict[str, str]] = {}
    try:
        schema = TypeAdapter(_pydantic_ready(annotation, records, 0)).json_schema(
            mode="serialization", schema_generator=PlanJsonSchema)
    except Exception:
        return None
    _describe_fields(schema, records)
    for definition in (schema.get("$defs") or {}).values():
        _describe_fields(definition, records)
    return schema


def _pydantic_ready(annotation: Any, records: dict[str, dict[str, str]], depth: int) -> Any:
    """``annotation`` with each ``typing.TypedDict`` rebuilt as a ``typing_extensions``
    one (pydantic refuses the former before Python 3.12); the field docstrings of the
    records met go to ``records`` (by class name)."""
    if depth > 20:
        return annotation
    if isinstance(annotation, type):
        if typing.is_typeddict(annotation):
            return _rebuilt_typeddict(annotation, records, depth)
        if dataclasses.is_dataclass(annotation) or hasattr(annotation, "model_fields"):
            records.setdefault(annotation.__name__, _attribute_docstrings(annotation))
        return annotation
    arguments = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if not arguments or origin is None:
        return annotation
    rebuilt = tuple(argument if isinstance(argument, str | int | float | bool | bytes)
                    or argument is Ellipsis
                    else _pydantic_ready(argument, records, depth + 1)
                    for argument in arguments)
    if rebuilt == arguments:
        return annotation
    if origin is typing.Annotated:
        return typing.Annotated[rebuilt]
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        return typing.Union[rebuilt]  # noqa: UP007 -- a tuple of types, not two operands
    try:
        return annotation.copy_with(rebuilt)  # typing generics
    except AttributeError:
        return types.GenericAlias(origin, rebuilt)  # list[X], dict[str, X]


_REBUILT: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()


def _rebuilt_typeddict(cls: type, records: dict[str, dict[str, str]], depth: int) -> Any:
    records.setdefault(cls.__name__, _attribute_docstrings(cls))
    with _DERIVED_LOCK:
        found = _REBUILT.get(cls)
    if found is not None:
        return found
    hints = typing.get_type_hints(cls, include_extras=True)
    required = getattr(cls, "__required_keys__", frozenset(hints))
    fields = {name: (typing_extensions.Required if name in required
                     else typing_extensions.NotRequired)[_pydantic_ready(hint, records,
                                                                         depth + 1)]
              for name, hint in hints.items()}
    rebuilt = typing_extensions.TypedDict(cls.__name__, fields)  # type: ignore[misc]
    rebuilt.__doc__ = cls.__doc__
    with _DERIVED_LOCK:
        _REBUILT[cls] = rebuilt
    return rebuilt


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields (``name: str`` then ``\"\"\"...\"\"\"``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    found: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and isinstance(following, ast.Expr) \
                and isinstance(following.value, ast.Constant) \
                and isinstance(following.value.value, str):
            found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


def _describe_fields(schema: Any, records: Mapping[str, Mapping[str, str]]) -> None:
    """Give the fields of a record schema titled like a class in ``records`` the
    descriptions that class's field docstrings hold (unless they have one)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return
    documented = records.get(str(schema.get("title", "")))
    if not documented:
        return
    for name, field_schema in schema["properties"].items():
        if isinstance(field_schema, dict) and name in documented \
                and "description" not in field_schema:
            field_schema["description"] = documented[name]


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        # with Annotated kept, a Field's description and constraints reach the schema
        return typing.get_type_hints(func, include_extras=True)
    except Exception:
        return {}
