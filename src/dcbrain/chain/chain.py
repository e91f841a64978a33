"""Chain: one LLM sub-task with prompts, optional structured output and tools.

A run renders the prompts from the current input, calls the LLM (running the tools it
asks for, for a bounded number of rounds), checks structured output against
``output_json_schema`` (repairing malformed JSON once, then asking the model once more
with the validation error), and on success merges the output into the input's
``__chains_intermediate_results`` so later chains can read it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from dcbrain.chain.intermediate import merge_intermediate_results
from dcbrain.chain.prompts import (
    AdditionalInfoPrompt,
    BasePrompt,
    PromptContext,
    as_prompts,
    normalize_knowledge,
)
from dcbrain.chain.result import ChainOutput, ChainResult
from dcbrain.chain.runnable import ChainRun, MessageLike, Runnable
from dcbrain.exceptions import TFChainError, TFError, TFSchemaError, TFToolError
from dcbrain.llm.base import ChatLLM, LLMReply, ToolCall
from dcbrain.messages import TextMessage, as_message
from dcbrain.retries import Backoff, RetryPolicy
from dcbrain.tools import (
    ApprovalRule,
    CallOptions,
    Tool,
    ToolLike,
    ToolProvider,
    as_tool,
    option,
)
from dcbrain.values.jsonsafe import dumps
from dcbrain.values.typed import output_adapter, validation_errors

if TYPE_CHECKING:
    from dcbrain.schemas import CompiledSchema

PromptArg = str | BasePrompt | Iterable[BasePrompt] | None

DEFAULT_PROMPT = "{{ input }}"
WRAPPED_RESULT_KEY = "result"


class Chain(Runnable):
    """An LLM call with prompts, advertised to planners by ``name``, ``description`` and schemas.

    ``prompt`` is a Jinja2 template string or prompt objects (default: the input text);
    ``system_prompt`` a template for the system message. With ``output_json_schema`` the
    output is a dict validated against it (a non-object schema's value is returned as
    ``{"result": value}``); without it, the reply text. ``output_type`` (a pydantic
    model, dataclass, TypedDict or any type pydantic knows) derives that schema, and the
    validated value is also returned as an instance in ``result.output`` (the type alone
    validates the reply, as pydantic does: the schema it derives is what the LLM is
    shown, not a second check). ``input_schema``
    describes the keyword arguments a plan passes; by default every template variable is
    a required string. ``tools`` may be called by the model (OpenAI tool calls). ``reuse=False``
    opts the chain out of the run journal's reuse (every plan calls it afresh). A run that
    has not finished after ``timeout_s`` seconds is cancelled and fails with
    :class:`~dcbrain.tfplan.TFToolTimeout`.
    ``retries``/``retry_on``/``backoff`` try a plan's failed call of the chain again, as for
    a :class:`~dcbrain.tools.Tool` (the provider's own retries of one LLM request are the
    LLM's, e.g. ``OpenAILLM(max_retries=...)``).
    ``requires_approval``/``approval_timeout_s``: a plan's call of the chain waits for a
    person's decision first, as for a :class:`~dcbrain.tools.Tool`. The chain holds these
    as its :class:`~dcbrain.tools.CallOptions` (``options``).
    """

    #: How the plans' calls of the chain are made (the attributes below read it).
    options: CallOptions = CallOptions()
    reuse = option("reuse")
    timeout_s = option("timeout_s")
    retry = option("retry")
    requires_approval = option("requires_approval")
    approval_timeout_s = option("approval_timeout_s")

    def __init__(
        self,
        *,
        name: str,
        llm: ChatLLM,
        description: str = "",
        prompt: PromptArg = DEFAULT_PROMPT,
        system_prompt: str | BasePrompt | None = None,
        output_json_schema: dict[str, Any] | None = None,
        output_type: Any = None,
        result_cache_key: str | None = None,
        catch_intermediate_chain_result: bool = True,
        input_schema: dict[str, Any] | None = None,
        tools: Sequence[ToolLike] | None = None,
        tags: Sequence[str] | None = None,
        max_tool_rounds: int = 8,
        max_tokens: int | None = None,
        temperature: float | None = None,
        reuse: bool = True,
        timeout_s: float | None = None,
        retries: int = 0,
        retry_on: Iterable[type[BaseException]] | None = None,
        backoff: Backoff | float | None = None,
        requires_approval: ApprovalRule = False,
        approval_timeout_s: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TFChainError(f"a chain needs a non-empty name, got {name!r}")
        self.options = CallOptions.of(
            f"chain {name!r}", reuse=reuse, timeout_s=timeout_s,
            retry=RetryPolicy.of(retries, retry_on, backoff),
            requires_approval=requires_approval, approval_timeout_s=approval_timeout_s)
        self.name = name
        self.description = description
        self.llm = llm
        self.result_cache_key = result_cache_key
        self.catch_intermediate_chain_result = catch_intermediate_chain_result
        self.tags = list(tags or [])
        self.max_tool_rounds = max_tool_rounds
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.prompts: list[BasePrompt] = []
        self.system_prompt: BasePrompt | None = None
        with self._named_errors():
            self.set_prompts(prompt, system_prompt=system_prompt)
        self.output_type = output_type
        self._output_adapter: TypeAdapter[Any] | None = None
        if output_type is not None:
            if output_json_schema is not None:
                raise TFChainError(f"chain {name!r}: give output_type or output_json_schema, "
                                   "not both")
            self._output_adapter, output_json_schema = self._typed_schema(output_type)
            self.output_json_schema: dict[str, Any] | None = output_json_schema
        else:
            self.output_json_schema = self._checked_schema(output_json_schema,
                                                           "output_json_schema")
        self._explicit_input_schema = self._checked_schema(input_schema, "input_schema")
        self.tools: list[Tool] = self._checked_tools(tools or [])
        self._llm_schema, self._wrapped = _llm_schema(self.output_json_schema)
        #: the schema's validator, for a chain without ``output_type``
        self._validator = (self._compiled(self._llm_schema, "output_json_schema")
                           if self._llm_schema is not None and self._output_adapter is None
                           else None)

    def __repr__(self) -> str:
        return f"Chain(name={self.name!r}, llm={self.llm!r})"

    # prompts

    def clear_prompts(self) -> None:
        """Remove every prompt, the system prompt included."""
        self.prompts = []
        self.system_prompt = None

    def set_prompts(
        self, prompt: PromptArg, *, system_prompt: str | BasePrompt | None = None
    ) -> None:
        """Replace the prompts (and the system prompt) of this chain."""
        prompts = as_prompts(prompt)
        system: BasePrompt | None
        if isinstance(system_prompt, str):
            system = AdditionalInfoPrompt(system_prompt, role="system")
        else:
            system = system_prompt
        self.prompts = prompts
        self.system_prompt = system

    def add_prompt(self, prompt: str | BasePrompt) -> None:
        """Append a prompt after the existing ones."""
        self.prompts.extend(as_prompts(prompt))

    # what planners see

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the keyword arguments a plan passes to this chain."""
        if self._explicit_input_schema is not None:
            return self._explicit_input_schema
        names: set[str] = set()
        for prompt in self._all_prompts():
            names |= prompt.input_variables()
        ordered = sorted(name for name in names if not name.startswith("_"))
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: {"type": "string"} for name in ordered},
        }
        if ordered:
            schema["required"] = ordered
        return schema

    @property
    def output_schema(self) -> dict[str, Any]:
        """JSON Schema of what the chain returns."""
        if self._llm_schema is None:
            return {"type": "string"}
        return self._llm_schema

    # running

    async def _async_run(self, run: ChainRun) -> ChainResult:
        """Run the chain on ``run.current_input``; the output is ``result.content`` (str or
        dict)."""
        message = run.current_input
        context = PromptContext(
            current_input=message,
            conversation=[as_message(item) for item in run.conversation or []],
            knowledge=normalize_knowledge(run.knowledge),
        )
        messages = self._render(context)
        messages.extend(_as_chat_message(item) for item in run.intermediate_msgs or [])
        if not messages:
            raise TFChainError(f"chain {self.name!r}: its prompts rendered no message")
        available = {tool.name: tool for tool in self.tools}
        for extra in self._checked_tools(run.tools or []):
            available.setdefault(extra.name, extra)
        result = ChainResult(origin=message)
        result.logs.extend(f"chain {self.name!r}: {note}" for note in context.notes)
        reply = await self._complete(messages, available, result)
        if self._llm_schema is None:
            content: ChainOutput = reply.content
            result.output = content
        else:
            content, reply = await self._structured(messages, available, reply, result)
        result.content = content
        result.current_generate = TextMessage(content=reply.content, role="assistant")
        self._on_succeeded(message, content)
        return result

    def _render(self, context: PromptContext) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        with self._named_errors():
            for prompt in self._all_prompts():
                messages.extend(prompt.to_messages(context))
        return _merge_adjacent(messages)

    async def _complete(
        self, messages: list[dict[str, Any]], tools: Mapping[str, Tool], result: ChainResult
    ) -> LLMReply:
        """Call the LLM, running the tools it asks for, until it answers."""
        specs = [tool.to_openai() for tool in tools.values()] or None
        rounds = 0
        while True:
            reply = await self.llm.achat(
                messages,
                json_schema=self._llm_schema,
                tools=specs,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
            result.usage += reply.usage
            if not reply.tool_calls:
                result.logs.append(f"chain {self.name!r}: {reply.model} replied")
                return reply
            if rounds >= self.max_tool_rounds:
                last_error = next(
                    (r["error"] for r in reversed(result.tool_returns) if r["error"]), None
                )
                detail = f"; last tool error: {last_error}" if last_error else ""
                raise TFChainError(
                    f"chain {self.name!r}: the LLM still called tools after "
                    f"{self.max_tool_rounds} rounds{detail}"
                )
            rounds += 1
            names = ", ".join(call.name for call in reply.tool_calls)
            result.logs.append(f"chain {self.name!r}: {reply.model} called {names}")
            assistant = reply.to_message()
            tool_messages = await asyncio.gather(
                *(self._call_tool(call, tools, result) for call in reply.tool_calls)
            )
            for new in (assistant, *tool_messages):
                messages.append(new)
                result.intermediate_msgs.append(new)

    async def _call_tool(
        self, call: ToolCall, tools: Mapping[str, Tool], result: ChainResult
    ) -> dict[str, Any]:
        record: dict[str, Any] = {
            "tool": call.name,
            "call_id": call.id,
            "arguments": call.arguments,
            "result": None,
            "error": None,
        }
        result.tool_returns.append(record)
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(tools)) or "none"
            record["error"] = f"unknown tool {call.name!r} (available: {known})"
        else:
            try:
                if tool.needs_approval(call.arguments):  # nobody to ask: never unasked
                    record["error"] = (f"tool {call.name!r} requires a person's approval: "
                                       "call it from the plan, not from a chain")
                else:
                    record["result"] = await tool.acall(**call.arguments)
            except TFToolError as exc:  # the model can fix its arguments: tell it
                record["error"] = str(exc)
            except TFError:
                raise
            except Exception as exc:
                raise TFChainError(
                    f"chain {self.name!r}: tool {call.name!r} raised {type(exc).__name__}: {exc}"
                ) from exc
        if record["error"] is not None:
            result.logs.append(f"chain {self.name!r}: tool error: {record['error']}")
            content = f"Error: {record['error']}"
        elif isinstance(record["result"], str):
            content = record["result"]
        else:
            content = dumps(record["result"])
        return {"role": "tool", "tool_call_id": call.id, "content": content}

    async def _structured(
        self,
        messages: list[dict[str, Any]],
        tools: Mapping[str, Tool],
        reply: LLMReply,
        result: ChainResult,
    ) -> tuple[dict[str, Any], LLMReply]:
        """The validated output; after one failed validation the model is asked once more."""
        value, error = self._decode(reply, result)
        if error is None:
            return value, reply
        result.logs.append(f"chain {self.name!r}: invalid structured output, retrying: {error}")
        retry = [
            {"role": "assistant", "content": reply.content},
            {
                "role": "user",
                "content": f"Your reply is not valid: {error}\nReply again with only the JSON "
                "object that conforms to the required JSON Schema.",
            },
        ]
        messages.extend(retry)
        result.intermediate_msgs.extend(retry)
        reply = await self._complete(messages, tools, result)
        value, error = self._decode(reply, result)
        if error is None:
            return value, reply
        what = "output_type" if self._output_adapter is not None else "output_json_schema"
        raise TFChainError(
            f"chain {self.name!r}: the LLM did not return JSON matching {what} "
            f"(after a repair and a retry): {error}"
        )

    def _decode(self, reply: LLMReply, result: ChainResult) -> tuple[dict[str, Any], str | None]:
        candidate = reply.parsed
        if candidate is None:
            text = _strip_code_fence(reply.content)
            try:
                candidate = json.loads(text)
            except ValueError:
                import json_repair  # only a malformed reply needs it: imported then

                candidate = json_repair.loads(text)
                if candidate == "" or not isinstance(candidate, dict | list):
                    return {}, f"the reply is not JSON: {_preview(reply.content)}"
                result.logs.append(f"chain {self.name!r}: repaired malformed JSON")
        if self._wrapped and not (isinstance(candidate, dict) and WRAPPED_RESULT_KEY in candidate):
            candidate = {WRAPPED_RESULT_KEY: candidate}
        if self._validator is not None:
            from dcbrain.schemas import describe_schema_error

            try:
                errors = self._validator.errors(candidate)
            except TFSchemaError as exc:
                raise TFChainError(str(exc)) from None
            if errors:
                return {}, "; ".join(describe_schema_error(error) for error in errors[:5])
        if not isinstance(candidate, dict):
            return {}, f"expected a JSON object, got {type(candidate).__name__}"
        if self._output_adapter is None:
            result.output = candidate
            return candidate, None
        return self._typed(candidate, result)

    def _typed(
        self, candidate: dict[str, Any], result: ChainResult
    ) -> tuple[dict[str, Any], str | None]:
        """Validate with ``output_type``; the content is the instance dumped as JSON data."""
        assert self._output_adapter is not None
        raw = candidate[WRAPPED_RESULT_KEY] if self._wrapped else candidate
        try:
            typed = self._output_adapter.validate_python(raw)
        except PydanticValidationError as exc:
            return {}, validation_errors(exc)
        result.output = typed
        plain = self._output_adapter.dump_python(typed, mode="json")
        return ({WRAPPED_RESULT_KEY: plain} if self._wrapped else plain), None

    def _typed_schema(self, output_type: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
        """The adapter of ``output_type`` and its JSON Schema (a top-level ``$ref`` inlined)."""
        try:
            return output_adapter(output_type)
        except TypeError as exc:
            raise TFChainError(f"chain {self.name!r}: {exc}") from None

    def _on_succeeded(self, message: TextMessage, content: ChainOutput) -> None:
        """Merge the output into ``__chains_intermediate_results`` (by its kind's merge rule)."""
        if not self.catch_intermediate_chain_result:
            return
        if isinstance(content, dict):
            merge_intermediate_results(message.additional_kwargs, content)
        elif self.result_cache_key:
            merge_intermediate_results(message.additional_kwargs, {self.result_cache_key: content})

    # construction helpers

    def _all_prompts(self) -> list[BasePrompt]:
        return ([self.system_prompt] if self.system_prompt else []) + self.prompts

    def _checked_schema(self, schema: dict[str, Any] | None, what: str) -> dict[str, Any] | None:
        if schema is None:
            return None
        if not isinstance(schema, dict):
            raise TFChainError(
                f"chain {self.name!r}: {what} must be a JSON Schema dict, "
                f"got {type(schema).__name__}"
            )
        self._compiled(schema, what)
        return schema

    def _compiled(self, schema: dict[str, Any], what: str) -> CompiledSchema:
        from dcbrain.schemas import compile_schema  # jsonschema: for a schema given as JSON

        try:
            return compile_schema(schema, f"chain {self.name!r}: {what}")
        except TFSchemaError as exc:
            raise TFChainError(str(exc)) from None

    def _checked_tools(self, tools: Sequence[ToolLike]) -> list[Tool]:
        checked: list[Tool] = []
        for item in tools:
            if not (isinstance(item, Tool | ToolProvider) or callable(item)):
                raise TFChainError(
                    f"chain {self.name!r}: a tool must be callable, got {type(item).__name__}"
                )
            tool = as_tool(item)
            if any(existing.name == tool.name for existing in checked):
                raise TFChainError(f"chain {self.name!r}: two tools are named {tool.name!r}")
            checked.append(tool)
        return checked

    @contextmanager
    def _named_errors(self) -> Iterator[None]:
        """Prefix this chain's name to the chain errors raised inside the block."""
        try:
            yield
        except TFChainError as exc:
            if str(exc).startswith("chain "):
                raise
            raise type(exc)(f"chain {self.name!r}: {exc}") from None


def _llm_schema(schema: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    """The schema sent to the LLM; a non-object schema is wrapped as ``{"result": ...}``."""
    if schema is None:
        return None, False
    is_object = schema.get("type") == "object" or ("type" not in schema and "properties" in schema)
    if is_object:
        return schema, False
    inner = {key: value for key, value in schema.items() if key != "$defs"}
    wrapped = {
        "type": "object",
        "properties": {WRAPPED_RESULT_KEY: inner},
        "required": [WRAPPED_RESULT_KEY],
        "additionalProperties": False,
    }
    if "$defs" in schema:  # references point at the root, so the definitions move there
        wrapped["$defs"] = schema["$defs"]
    return wrapped, True


def _merge_adjacent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive plain messages of the same role (one system message, not three)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and set(previous) == {"role", "content"} == set(message)
            and previous["role"] == message["role"]
            and isinstance(previous["content"], str)
            and isinstance(message["content"], str)
        ):
            merged[-1] = {**previous, "content": previous["content"] + "\n\n" + message["content"]}
        else:
            merged.append(dict(message))
    return merged


def _as_chat_message(item: MessageLike) -> dict[str, Any]:
    return item.to_openai() if isinstance(item, TextMessage) else dict(item)


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def _strip_code_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def _preview(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
