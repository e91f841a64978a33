"""Python functions as tools: name, description, argument schema, validated calls.

Any function (sync or async) with type hints becomes a :class:`Tool`; its docstring
gives the description and, in an ``Args:`` (or NumPy/Sphinx) section, each parameter's.
Its arguments are validated with pydantic before the call. Its result becomes plain JSON
data at the boundary (:func:`to_json_data`): pydantic models, dataclasses, TypedDicts, enums,
``UUID`` and the like are dumped as pydantic dumps them in JSON mode, except that
``Decimal``, ``date``, ``datetime``, ``time`` and ``timedelta`` stay themselves (they are
plan values); anything else is an error. A :class:`SchemaTool` is a tool described by a JSON
Schema instead of a signature (MCP tools, chains used as tools).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import copy
import inspect
import keyword
import threading
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from dcbrain._sync import run_sync
from dcbrain.exceptions import TFSchemaError, TFToolError
from dcbrain.policies import Policy, Violation
from dcbrain.retries import Backoff, RetryPolicy, acall_with_retries, call_with_retries
from dcbrain.tfplan.abandoned import AbandonedCall, abandoned_threads
from dcbrain.tfplan.errors import TFToolTimeout
from dcbrain.tools.data import checked_example, to_json_data
from dcbrain.tools.options import (
    ApprovalRule,
    CallOptions,
    needs_approval,
    option,
    within_timeout,
)
from dcbrain.tools.schemas import PlanJsonSchema as PlanJsonSchema
from dcbrain.tools.schemas import derived_from
from dcbrain.values.jsonsafe import edge_arguments

T = typing.TypeVar("T")


class _Unannounced:
    """Retry hooks of a tool called as a plain callable: nobody journals or announces."""

    def retrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                 started: float) -> None:
        pass

    async def aretrying(self, attempt: int, attempts: int, error: Exception, delay_s: float,
                        started: float) -> None:
        pass


_UNANNOUNCED = _Unannounced()


class Tool:
    """A named, described, validated callable usable from plans, chains and agents.

    ``reuse=False`` opts the tool out of the run journal's reuse: every call in a new
    plan runs it again (a finished call is still never re-run when a run is replayed).
    ``timeout_s`` ends a call that has not returned by then with :class:`TFToolTimeout`
    (a failed call): an async tool is cancelled; a sync one then runs in a thread of its
    own, which is abandoned at the timeout (it runs on until it returns; its return is
    ignored).

    ``retries`` more tries follow a call that failed with one of ``retry_on`` (default:
    ``ConnectionError``, ``TimeoutError`` and :class:`~dcbrain.exceptions.TransientError`),
    after ``backoff`` (a :class:`~dcbrain.retries.Backoff`, or a fixed number of seconds;
    default exponential from 0.5 s to 10 s with jitter). Plans run the tries
    (:class:`~dcbrain.chain.TFChainInterpreter`): ``call``/``acall`` make one.

    ``requires_approval`` (``True``, or a predicate of the call's keyword arguments) makes
    a run pause before each such call until a person approves or denies it (see
    ``DCBrain.approve``); ``approval_timeout_s`` denies it when nobody decides in time
    (default: the brain's). ``side_effects=False`` marks a read-only tool,
    ``trusted_output=True`` a tool whose results are trusted data (``trusted_fields``: only
    these fields of the records it returns, such as ids the system assigns), and
    ``trusted_args`` the arguments that may only carry trusted data (the injection-defence
    policies);
    ``policies`` are functions of a :class:`~dcbrain.policies.PolicyCall` checked before
    each call. ``on_violation="ask"`` puts a call whose ``trusted_args`` carry untrusted
    data to a person instead of refusing it (``"deny"``; default: the brain's).

    The planner reads the result's shape from the return annotation (a pydantic model,
    dataclass, TypedDict, ``list``/``dict`` of them, ``Decimal``, ``date`` ...), else from
    ``output_schema`` (a JSON Schema, which wins over the annotation), and the docstring's
    ``Returns:`` section; ``example`` is a sample result it is shown (for a text result,
    its format). The static checker holds plans to the same shape.
    """

    #: How the plans' calls of the tool are made (the attributes below read it).
    options: CallOptions = CallOptions()
    #: How failed calls are tried again; ``None``: they are not.
    retry = option("retry")
    #: Whether a replan may get this tool's recorded result instead of a new call
    #: (the run's call journal); ``False`` for reads that must be fresh.
    reuse = option("reuse")
    #: Seconds a call may take before it fails with :class:`TFToolTimeout`.
    timeout_s = option("timeout_s")
    #: Where the tool comes from, said in errors that name it (``"MCP server 'notes'"``);
    #: empty for a Python function, which its qualified name identifies.
    origin: str = ""
    #: Whether a call waits for a person's decision: ``True``, or a predicate of its
    #: keyword arguments.
    requires_approval = option("requires_approval")
    #: Seconds a call waits for a decision before it is denied; ``None``: the brain's.
    approval_timeout_s = option("approval_timeout_s")
    #: ``False`` for a read-only tool, whose calls no policy checks.
    side_effects = option("side_effects")
    #: Whether the tool's results are trusted data (a company database), not untrusted text.
    trusted_output = option("trusted_output")
    #: Fields of the records the tool returns that are trusted data (``id_``), the rest not.
    trusted_fields = option("trusted_fields")
    #: Arguments that may carry trusted data only (the user's, the plan's, trusted tools').
    trusted_args = option("trusted_args")
    #: Policies checked before each call (see :mod:`dcbrain.policies`).
    policies = option("policies")
    #: What a call whose ``trusted_args`` carry untrusted data gets: ``"deny"``, ``"ask"``
    #: a person, or ``None``: the brain's choice.
    on_violation = option("on_violation")
    #: What the docstring's ``Returns:`` says of the result, and an example result.
    returns_doc: str = ""
    example: Any = None

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with these keyword arguments waits for a person's decision;
        raises :class:`TFToolError` when the tool's predicate fails."""
        return needs_approval(self, arguments)

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        reuse: bool = True,
        timeout_s: float | None = None,
        retries: int = 0,
        retry_on: Iterable[type[BaseException]] | None = None,
        backoff: Backoff | float | None = None,
        requires_approval: ApprovalRule = False,
        approval_timeout_s: float | None = None,
        side_effects: bool = True,
        trusted_output: bool = False,
        trusted_args: Iterable[str] = (),
        policies: Iterable[Policy] = (),
        on_violation: Violation | None = None,
        trusted_fields: Iterable[str] = (),
        output_schema: Mapping[str, Any] | None = None,
        example: Any = None,
    ) -> None:
        self.func = func
        self.options = CallOptions.of(
            f"tool {name or func.__name__!r}", reuse=reuse, timeout_s=timeout_s,
            retry=RetryPolicy.of(retries, retry_on, backoff),
            requires_approval=requires_approval, approval_timeout_s=approval_timeout_s,
            side_effects=side_effects, trusted_output=trusted_output,
            trusted_args=trusted_args, policies=policies, on_violation=on_violation,
            trusted_fields=trusted_fields)
        self.name = name or func.__name__
        self.is_async = inspect.iscoroutinefunction(func)
        self.signature, self._validated, parameters, returns, documented = derived_from(func)
        self.description = description or documented.summary
        self.parameters_schema: dict[str, Any] = copy.deepcopy(parameters)
        self.returns_schema: dict[str, Any] | None = copy.deepcopy(
            dict(output_schema) if output_schema is not None else returns)
        #: What the docstring's ``Returns:`` section says of the result.
        self.returns_doc = documented.returns
        #: An example result shown to the planner (a text tool's sample output).
        self.example = checked_example(example, f"tool {self.name!r}")

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        """The tool as a plain callable (``Interpreter(tools=[...])``): a sync tool's
        checked result, or for an async one an awaitable of it."""
        arguments = self.keyword_arguments(args, kwargs)
        if self.retry is None:
            return self.acall(**arguments) if self.is_async else self.call(**arguments)
        if self.is_async:
            return acall_with_retries(self.retry, lambda: self.acall(**arguments),
                                      _UNANNOUNCED)
        return call_with_retries(self.retry, lambda: self.call(**arguments), _UNANNOUNCED)

    def keyword_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of a call passing ``args`` by position, as its parameters
        name them; a positional-only parameter cannot be passed from a plan."""
        if not args and self._binds(kwargs):  # what binding gives, in the parameters' order
            return {name: kwargs[name] for name in self.signature.parameters if name in kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TFToolError(f"tool {self.name!r}: {exc}") from None
        arguments: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                arguments.update(value)
            elif kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL):
                raise TFToolError(f"tool {self.name!r}: parameter {name!r} cannot be passed "
                                  "from a plan (positional-only)")
            else:
                arguments[name] = value
        return arguments

    def validate_arguments(self, kwargs: Mapping[str, Any]) -> None:
        """Raise :class:`TFToolError` naming the tool and argument when ``kwargs`` is wrong."""
        if self._binds(kwargs):
            return
        try:
            self.signature.bind(**kwargs)
        except TypeError as exc:
            raise TFToolError(f"tool {self.name!r}: {exc}") from None

    def _binds(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether ``signature.bind(**kwargs)`` surely succeeds: every parameter is one a
        keyword passes (none is positional-only or collects), ``kwargs`` names only them
        and every required one."""
        names, required = self._keywords()
        return names is not None and kwargs.keys() <= names.keys() and required <= kwargs.keys()

    def _keywords(self) -> tuple[dict[str, None] | None, frozenset[str]]:
        """The parameters of :attr:`signature` in order, when a keyword passes each one
        (else ``None``), and the required ones; read once per signature."""
        made = self.__dict__.get("_keyword_parameters")
        if made is None or made[0] is not self.signature:
            parameters = self.signature.parameters.values()
            by_keyword = all(parameter.kind in _BY_KEYWORD for parameter in parameters)
            names = dict.fromkeys(parameter.name for parameter in parameters) \
                if by_keyword else None
            required = frozenset(parameter.name for parameter in parameters
                                 if parameter.default is inspect.Parameter.empty)
            made = (self.signature, names, required)
            self.__dict__["_keyword_parameters"] = made
        return made[1], made[2]

    def call(self, /, **kwargs: Any) -> Any:
        """Call a sync tool with validated keyword arguments; the result is checked."""
        self.validate_arguments(kwargs)
        try:
            if self.timeout_s is None:
                result = self._validated(**kwargs)
            else:
                result = self._result_in_time(*self._in_thread(kwargs))
        except ValidationError as exc:
            raise TFToolError(f"tool {self.name!r}: {_describe(exc)}") from None
        if inspect.isawaitable(result):
            raise TFToolError(f"tool {self.name!r} is async: use acall()")
        return to_json_data(result, f"tool {self.name!r} result")

    async def acall(self, /, **kwargs: Any) -> Any:
        """Call a sync or async tool with validated keyword arguments."""
        self.validate_arguments(kwargs)
        try:
            if self.timeout_s is None:
                result = self._validated(**kwargs)
                if inspect.isawaitable(result):
                    result = await result
            elif self.is_async:
                result = await within_timeout(self._validated(**kwargs), self.timeout_s,
                                              self._timed_out)
            else:
                future, call = self._in_thread(kwargs)
                result = await within_timeout(asyncio.wrap_future(future), self.timeout_s,
                                              lambda: self._abandoned(call))
        except ValidationError as exc:
            raise TFToolError(f"tool {self.name!r}: {_describe(exc)}") from None
        return to_json_data(result, f"tool {self.name!r} result")

    def _in_thread(self, kwargs: Mapping[str, Any]
                   ) -> tuple[concurrent.futures.Future[Any], AbandonedCall]:
        """The sync function called in a thread of its own (abandoned at a timeout);
        refused at once while the process holds its limit of abandoned threads and this
        tool has one of them (:mod:`dcbrain.tfplan.abandoned`)."""
        abandoned_threads.check(self.name, f"tool {self.name!r}")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        context = contextvars.copy_context()
        call = abandoned_threads.start(self.name)

        def work() -> None:
            try:
                future.set_result(context.run(self._validated, **kwargs))
            except BaseException as exc:  # the caller's to raise; ignored once abandoned
                future.set_exception(exc)
            finally:
                abandoned_threads.end(call)

        threading.Thread(target=work, name=f"tool {self.name}", daemon=True).start()
        return future, call

    def _result_in_time(self, future: concurrent.futures.Future[Any],
                        call: AbandonedCall) -> Any:
        try:
            return future.result(self.timeout_s)
        except TimeoutError:
            if future.done():  # the tool's own TimeoutError
                raise
            raise self._abandoned(call) from None

    def _abandoned(self, call: AbandonedCall) -> TFToolTimeout:
        """The call's thread is left running: counted until it returns."""
        abandoned_threads.abandon(call)
        return self._timed_out()

    def _timed_out(self) -> TFToolTimeout:
        return TFToolTimeout(f"tool {self.name!r} did not return within its timeout_s of "
                             f"{self.timeout_s:g} s")

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


@runtime_checkable
class ToolProvider(Protocol):
    """An object that can stand for a tool (a chain: ``chain.as_tool()``)."""

    def as_tool(self) -> Tool: ...


def as_tool(obj: Tool | ToolProvider | Callable[..., Any]) -> Tool:
    """``obj`` as a :class:`Tool`: a tool as it is, a chain through ``as_tool()``, a function."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, ToolProvider) and not inspect.isroutine(obj):
        return obj.as_tool()
    if not callable(obj):
        hint = " (a collection of tools, such as MCPTools, goes in unpacked: " \
               "tools=[*mcp_tools, ...])" if isinstance(obj, Iterable) else ""
        raise TypeError(f"{type(obj).__name__} is not a tool{hint}")
    return Tool(obj)


def tool(func: Callable[..., Any]) -> Tool:
    """Decorator form of :class:`Tool`."""
    return Tool(func)


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"argument {location!r}: {error['msg']}")
    return "; ".join(parts)


class SchemaTool(Tool):
    """A tool described by a JSON Schema of its keyword arguments, not by a signature.

    ``call`` is an async function taking the keyword arguments. Argument names are bound
    to the schema's properties and, with ``check_values``, values are checked against
    ``parameters_schema`` before the call; the result becomes plain
    JSON data. With ``closed=True`` a schema that does not say otherwise rejects
    unknown arguments (``"additionalProperties": false``), so the static checker reports
    them too. ``returns_schema`` is the result's shape the planner reads and the checker
    holds plans to (an MCP tool's ``outputSchema``). ``reuse``, ``timeout_s``,
    ``retries``/``retry_on``/``backoff``, ``example``,
    ``requires_approval``/``approval_timeout_s`` and the trust options as for
    :class:`Tool`. The schema is compiled by :func:`dcbrain.schemas.compile_schema`; a
    refused one raises
    :class:`~dcbrain.exceptions.TFSchemaError` naming ``schema_origin`` (default: the tool's
    ``parameters_schema``).
    """

    def __init__(
        self,
        call: Callable[..., Awaitable[Any]],
        *,
        name: str,
        description: str = "",
        parameters_schema: Mapping[str, Any] | None = None,
        returns_schema: dict[str, Any] | None = None,
        closed: bool = False,
        check_values: bool = True,
        reuse: bool = True,
        schema_origin: str | None = None,
        timeout_s: float | None = None,
        retries: int = 0,
        retry_on: Iterable[type[BaseException]] | None = None,
        backoff: Backoff | float | None = None,
        requires_approval: ApprovalRule = False,
        approval_timeout_s: float | None = None,
        side_effects: bool = True,
        trusted_output: bool = False,
        trusted_args: Iterable[str] = (),
        policies: Iterable[Policy] = (),
        on_violation: Violation | None = None,
        trusted_fields: Iterable[str] = (),
        example: Any = None,
    ) -> None:
        from dcbrain.schemas import compile_schema

        schema = dict(parameters_schema or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        if closed:
            schema.setdefault("additionalProperties", False)
        self.func = call
        self.options = CallOptions.of(
            f"tool {name!r}", reuse=reuse, timeout_s=timeout_s,
            retry=RetryPolicy.of(retries, retry_on, backoff),
            requires_approval=requires_approval, approval_timeout_s=approval_timeout_s,
            side_effects=side_effects, trusted_output=trusted_output,
            trusted_args=trusted_args, policies=policies, on_violation=on_violation,
            trusted_fields=trusted_fields)
        self.name = name
        self.description = description
        self.is_async = True
        self.parameters_schema = schema
        self.returns_schema = returns_schema
        self.example = checked_example(example, f"tool {name!r}")
        self.signature = _schema_signature(schema)
        self.check_values = check_values
        self._compiled_schema = compile_schema(
            schema, schema_origin or f"tool {name!r} parameters_schema")

    def __repr__(self) -> str:
        return f"SchemaTool({self.name!r})"

    def validate_values(self, kwargs: Mapping[str, Any]) -> None:
        """Raise :class:`TFToolError` when ``kwargs`` do not match the schema."""
        try:
            errors = self._compiled_schema.errors(dict(kwargs))
        except TFSchemaError as exc:
            raise TFToolError(str(exc)) from None
        if errors:
            raise TFToolError(f"tool {self.name!r}: " + "; ".join(
                _describe_schema_error(error) for error in errors[:5]))

    def call(self, /, **kwargs: Any) -> Any:
        """Blocking :meth:`acall`."""
        return run_sync(lambda: self.acall(**kwargs))

    async def acall(self, /, **kwargs: Any) -> Any:
        self.validate_arguments(kwargs)
        kwargs = edge_arguments(kwargs)  # the callee takes JSON: a Decimal goes as its text
        if self.check_values:
            self.validate_values(kwargs)
        if self.timeout_s is None:
            result = await self.func(**kwargs)
        else:
            result = await within_timeout(self.func(**kwargs), self.timeout_s, self._timed_out)
        return to_json_data(result, f"tool {self.name!r} result")


#: Parameter kinds a keyword argument passes (and only one).
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _schema_signature(schema: Mapping[str, Any]) -> inspect.Signature:
    """Keyword-only parameters for the schema's properties (``**kwargs`` when it is open)."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parameters: list[inspect.Parameter] = []
    open_ = schema.get("additionalProperties", True) is not False
    for name in properties:
        if not name.isidentifier() or keyword.iskeyword(name):
            open_ = True  # reachable only through **{...}
            continue
        default = inspect.Parameter.empty if name in required else None
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                                            default=default))
    parameters.sort(key=lambda p: p.default is not inspect.Parameter.empty)
    if open_:
        parameters.append(inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


def _describe_schema_error(error: Any) -> str:
    where = ".".join(str(part) for part in error.absolute_path)
    return f"argument {where!r}: {error.message}" if where else error.message


ToolLike = Tool | ToolProvider | Callable[..., Any] | Callable[..., Awaitable[Any]]
