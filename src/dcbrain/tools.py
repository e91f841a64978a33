"""Python functions as tools: name, description, argument schema, validated calls.

Any function (sync or async) with type hints becomes a :class:`Tool`. Its arguments
are validated with pydantic before the call, and its result must be JSON-like data
(``None``, ``bool``, ``int``, ``float``, ``str``, lists/tuples and dicts with string keys).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError, validate_call

from dcbrain.exceptions import TFToolError


class Tool:
    """A named, described, validated callable usable from plans, chains and agents.

    ``reuse=False`` opts the tool out of the run journal's reuse: every call in a new
    plan runs it again (a finished call is still never re-run when a run is replayed).
    """

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        reuse: bool = True,
    ) -> None:
        self.func = func
        #: Whether a replan may get this tool's recorded result instead of a new call
        #: (the run's call journal); ``False`` for reads that must be fresh.
        self.reuse = reuse
        self.name = name or func.__name__
        self.description = description or inspect.cleandoc(func.__doc__ or "").split("\n\n")[0]
        self.is_async = inspect.iscoroutinefunction(func)
        self.signature = inspect.signature(func)
        self._validated = validate_call(config=ConfigDict(arbitrary_types_allowed=False))(func)
        self.parameters_schema = _arguments_schema(self.signature, func)
        self.returns_schema = _returns_schema(self.signature)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def validate_arguments(self, kwargs: Mapping[str, Any]) -> None:
        """Raise :class:`TFToolError` naming the tool and argument when ``kwargs`` is wrong."""
        try:
            self.signature.bind(**kwargs)
        except TypeError as exc:
            raise TFToolError(f"tool {self.name!r}: {exc}") from None

    def call(self, /, **kwargs: Any) -> Any:
        """Call a sync tool with validated keyword arguments; the result is checked."""
        self.validate_arguments(kwargs)
        try:
            result = self._validated(**kwargs)
        except ValidationError as exc:
            raise TFToolError(f"tool {self.name!r}: {_describe(exc)}") from None
        if inspect.isawaitable(result):
            raise TFToolError(f"tool {self.name!r} is async: use acall()")
        return check_json_like(result, f"tool {self.name!r} result")

    async def acall(self, /, **kwargs: Any) -> Any:
        """Call a sync or async tool with validated keyword arguments."""
        self.validate_arguments(kwargs)
        try:
            result = self._validated(**kwargs)
            if inspect.isawaitable(result):
                result = await result
        except ValidationError as exc:
            raise TFToolError(f"tool {self.name!r}: {_describe(exc)}") from None
        return check_json_like(result, f"tool {self.name!r} result")

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools=[...]`` entry of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema,
            },
        }


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    return obj if isinstance(obj, Tool) else Tool(obj)


def tool(func: Callable[..., Any]) -> Tool:
    """Decorator form of :class:`Tool`."""
    return Tool(func)


def check_json_like(value: Any, where: str, _depth: int = 0) -> Any:
    """Return ``value`` if it is JSON-like data (tuples become lists), else raise."""
    if _depth > 100:
        raise TFToolError(f"{where}: nested deeper than 100 levels")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [check_json_like(item, where, _depth + 1) for item in value]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TFToolError(f"{where}: dict keys must be str, got {type(key).__name__}")
        return {key: check_json_like(item, where, _depth + 1) for key, item in value.items()}
    raise TFToolError(f"{where}: {type(value).__name__} is not JSON-like data")


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"argument {location!r}: {error['msg']}")
    return "; ".join(parts)


def _arguments_schema(signature: inspect.Signature, func: Callable[..., Any]) -> dict[str, Any]:
    hints = _type_hints(func)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        try:
            schema = TypeAdapter(annotation).json_schema()
        except Exception:
            schema = {}
        if param.default is not param.empty:
            try:
                TypeAdapter(Any).dump_python(param.default, mode="json")
                schema = {**schema, "default": param.default}
            except Exception:
                pass
        else:
            required.append(name)
        properties[name] = schema
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema_out["required"] = required
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    schema_out["additionalProperties"] = has_var_kw
    return schema_out


def _returns_schema(signature: inspect.Signature) -> dict[str, Any] | None:
    if signature.return_annotation is signature.empty:
        return None
    try:
        return TypeAdapter(signature.return_annotation).json_schema()
    except Exception:
        return None


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        import typing

        return typing.get_type_hints(func)
    except Exception:
        return {}


ToolLike = Tool | Callable[..., Any] | Callable[..., Awaitable[Any]]
