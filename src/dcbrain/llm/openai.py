"""Any OpenAI-compatible chat-completions API: OpenAI, DeepSeek, vLLM, Ollama, llama.cpp server.

Retries with exponential backoff on 408/409/429/5xx and connection errors, honouring
``Retry-After``, are the ``openai`` SDK's own; this module configures them
(``max_retries``, default 2, and ``timeout``) and turns what is left into
:class:`TFLLMError` — :class:`TFLLMUnavailable`, a transient error, when the SDK's
retries ran out on one of those. A streamed reply is retried only until its first text
arrives; a stream that breaks later is a :class:`TFLLMUnavailable` too.

The SDK (and ``httpx``) is imported when a client is first needed (a call,
:meth:`OpenAILLM.warm_up`), not when the model is configured: it takes seconds to import on
a loaded machine, and a server builds its models before it answers its first request.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from dcbrain.exceptions import TFLLMError, TFLLMUnavailable
from dcbrain.llm.base import DEFAULT_MAX_OUTPUT_TOKENS, ChatLLM, LLMReply, ToolCall
from dcbrain.llm.tokens import cl100k_base_length, count_message_tokens
from dcbrain.usage import Usage

if TYPE_CHECKING:
    import openai

StructuredOutput = Literal["json_schema", "json_object", "prompt"]

_BODY_SNIPPET_CHARS = 500
#: The wait before asking again for a stream that broke before its first text (doubling).
_RETRY_DELAY_S = 0.5
_MAX_RETRY_DELAY_S = 8.0


class OpenAILLM(ChatLLM):
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``structured_output`` says how a ``json_schema`` request is sent: ``"json_schema"``
    (``response_format`` with the schema; OpenAI, vLLM, Ollama, llama.cpp),
    ``"json_object"`` (JSON mode plus the schema in the system message; e.g. DeepSeek)
    or ``"prompt"`` (the schema in the system message only). ``api_key`` defaults to
    ``$OPENAI_API_KEY``; servers that need none accept any value. ``stream`` (on by
    default) has a call whose text is listened for ask for the reply as server-sent
    chunks; turn it off for a server that cannot stream.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        extra_headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        structured_output: StructuredOutput = "json_schema",
        strict_json_schema: bool = False,
        max_tokens_parameter: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        extra_body: dict[str, Any] | None = None,
        stream: bool = True,
    ) -> None:
        resolved_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not resolved_key:
            raise ValueError(
                f"OpenAILLM({model!r}): no api_key given and OPENAI_API_KEY is not set "
                "(for a local server that needs no key, pass any value, e.g. api_key='none')"
            )
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_output_tokens = max_output_tokens
        self.structured_output: StructuredOutput = structured_output
        self.strict_json_schema = strict_json_schema
        self.max_tokens_parameter = max_tokens_parameter
        self.extra_body = dict(extra_body or {})
        self.stream = stream
        self._api_key = resolved_key
        self._headers = dict(extra_headers or {})
        # An SDK client holds connections bound to one event loop; the sync wrapper
        # runs each call on its own loop, so keep one client per loop.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]
        self._clients = weakref.WeakKeyDictionary()

    def _client(self) -> openai.AsyncOpenAI:
        import openai

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers=self._headers or None,
            )
            self._clients[loop] = client
        return client

    def warm_up(self) -> None:
        """Load now what the SDK loads on its first request (its resources, response types).

        That takes most of a second the first time in a process; a worker pays it before
        its first run instead of in it. No request is made.
        """
        import openai
        from openai.types.chat import ChatCompletion

        client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url,
                                    max_retries=0)
        client.chat.completions  # noqa: B018 - the SDK imports its resources on first use
        ChatCompletion.model_validate({
            "id": "warm-up", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": ""}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })

    async def aclose(self) -> None:
        """Close the HTTP connections opened on the running event loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def _achat(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                     tools: list[dict[str, Any]] | None, max_tokens: int | None,
                     temperature: float | None) -> LLMReply:
        params = self._params(messages, json_schema, tools, max_tokens, temperature)
        response = await self._create(params)
        return self._reply(response, messages)

    async def _astream(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                       tools: list[dict[str, Any]] | None, max_tokens: int | None,
                       temperature: float | None, on_delta: Callable[[str], None]) -> LLMReply:
        """The reply as server-sent chunks, with the usage in the last (``include_usage``).

        The SDK's retries cover the request until the stream begins; a stream that breaks
        before any text arrived is asked for again (up to ``max_retries`` times), one that
        breaks later is a :class:`TFLLMUnavailable` (transient: nothing half-written is
        returned as a reply).
        """
        params = self._params(messages, json_schema, tools, max_tokens, temperature)
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
        tries = 0
        while True:
            tries += 1
            reply = StreamedReply(self.model)
            stream = await self._create(params)
            if not _is_event_stream(stream):  # a server that ignores "stream": one completion
                whole = await self._unstreamed(stream, messages)
                if whole.content:
                    on_delta(whole.content)
                return whole
            try:
                await self._read_stream(stream, reply, on_delta)
            except TFLLMUnavailable:
                if reply.chars or tries > self.max_retries:
                    raise
                await asyncio.sleep(min(_RETRY_DELAY_S * 2 ** (tries - 1), _MAX_RETRY_DELAY_S))
                continue
            return reply.reply()

    async def _read_stream(
        self, stream: Any, reply: StreamedReply, on_delta: Callable[[str], None]
    ) -> None:
        import httpx
        import openai

        try:
            async for chunk in stream:
                text = reply.add(chunk)
                if text:
                    on_delta(text)
        except (httpx.HTTPError, openai.APIError) as exc:
            raise TFLLMUnavailable(self._redacted(
                f"{self._where()}: the reply's stream broke after {reply.chars} characters: "
                f"{type(exc).__name__}: {exc}")) from exc
        except ValueError as exc:
            raise TFLLMError(f"{self._where()}: malformed stream chunk: {exc}") from exc
        finally:
            await stream.close()
        if reply.finish_reason is None:
            raise TFLLMUnavailable(
                f"{self._where()}: the reply's stream ended after {reply.chars} characters "
                "without a finish reason (cut short)")

    async def _unstreamed(self, stream: Any, messages: list[dict[str, Any]]) -> LLMReply:
        import httpx
        from openai.types.chat import ChatCompletion

        try:
            data = json.loads(await stream.response.aread())
        except (httpx.HTTPError, ValueError) as exc:
            raise TFLLMError(f"{self._where()}: malformed response: {exc}") from exc
        finally:
            await stream.close()
        if not isinstance(data, dict):
            raise TFLLMError(f"{self._where()}: malformed response: {_snippet(str(data))}")
        # built as leniently as the SDK builds an unstreamed completion (no validation)
        return self._reply(ChatCompletion.construct(**data), messages)

    def _params(
        self,
        messages: list[dict[str, Any]],
        json_schema: dict[str, Any] | None,
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if json_schema is not None:
            params.update(self._structured_output_params(messages, json_schema))
        if tools:
            params["tools"] = tools
        # always send a limit: token budgets reserve at most max_output_tokens per call
        limit = max_tokens if max_tokens is not None else self.max_output_tokens
        params[self.max_tokens_parameter] = limit
        if temperature is not None:
            params["temperature"] = temperature
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    async def _create(self, params: dict[str, Any]) -> Any:
        """The SDK's request (with its retries), its failures as :class:`TFLLMError`."""
        try:
            return await self._call(params)
        except TFLLMError as exc:  # said without the key or a URL's password
            raise type(exc)(self._redacted(str(exc))) from exc.__cause__

    async def _call(self, params: dict[str, Any]) -> Any:
        import openai

        try:
            return await self._client().chat.completions.create(**params)
        except openai.APIStatusError as exc:
            error = TFLLMUnavailable if _retried_status(exc.status_code) else TFLLMError
            raise error(
                f"{self._where()}: HTTP {exc.status_code}: {_snippet(exc.response.text)}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise TFLLMUnavailable(
                f"{self._where()}: no response within {self.timeout}s "
                f"(tried {self.max_retries + 1} times)"
            ) from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise TFLLMUnavailable(f"{self._where()}: connection failed: {cause}") from exc
        except (openai.OpenAIError, ValueError) as exc:
            raise TFLLMError(f"{self._where()}: malformed response: {exc}") from exc

    def _redacted(self, text: str) -> str:
        """``text`` without this LLM's API key (a provider may echo it in an error) nor
        the password of any URL."""
        if self._api_key and len(self._api_key) >= _MIN_SECRET_CHARS:
            text = text.replace(self._api_key, "****")
        return _URL_PASSWORD.sub(r"\1****@", text)

    def _structured_output_params(
        self, messages: list[dict[str, Any]], json_schema: dict[str, Any]
    ) -> dict[str, Any]:
        if self.structured_output == "json_schema":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(json_schema),
                        "schema": json_schema,
                        "strict": self.strict_json_schema,
                    },
                }
            }
        instruction = (
            "Reply with only a JSON object that conforms to this JSON Schema:\n"
            + json.dumps(json_schema, ensure_ascii=False)
        )
        first = messages[0] if messages else {}
        if first.get("role") == "system" and isinstance(first.get("content"), str):
            system = {**first, "content": first["content"] + "\n\n" + instruction}
            patched = [system, *messages[1:]]
        else:
            patched = [{"role": "system", "content": instruction}, *messages]
        params: dict[str, Any] = {"messages": patched}
        if self.structured_output == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def _reply(self, response: Any, messages: list[dict[str, Any]]) -> LLMReply:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise TFLLMError(
                f"{self._where()}: malformed response: no choices in {_snippet(str(response))}"
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise TFLLMError(f"{self._where()}: malformed response: choice without a message")
        content = message.content or ""
        tool_calls = [
            ToolCall(
                id=call.id,
                name=call.function.name,
                arguments=_decode_arguments(call.function.arguments),
            )
            for call in (message.tool_calls or [])
            if getattr(call, "type", "function") == "function"
        ]
        model = getattr(response, "model", None) or self.model
        reported = getattr(response, "usage", None)
        if reported is not None and reported.prompt_tokens is not None:
            usage = Usage.of_call(model, reported.prompt_tokens, reported.completion_tokens or 0)
        else:  # some servers omit usage: count it so budgets still hold
            completion = cl100k_base_length(content) + sum(
                cl100k_base_length(call.name + json.dumps(call.arguments)) for call in tool_calls
            )
            usage = Usage.of_call(model, count_message_tokens(messages), completion)
        return LLMReply(
            content=content,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=usage,
            model=model,
            tool_calls=tool_calls,
        )

    def _where(self) -> str:
        return f"OpenAILLM({self.model!r}) at {self.base_url or 'api.openai.com'}"


#: ``scheme://user:password@``: the password is never repeated in an error.
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^@\s/]+@")
#: An API key shorter than this (``"none"`` for a local server) is not looked for.
_MIN_SECRET_CHARS = 6


class StreamedReply:
    """A streamed reply put together from its chunks: text, tool calls, finish reason, usage."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.parts: list[str] = []
        self.chars = 0
        self.finish_reason: str | None = None
        self.usage = Usage()
        # tool calls by index: id, name and the arguments' JSON text as it arrives
        self._calls: dict[int, list[str]] = {}

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its new text."""
        self.model = getattr(chunk, "model", None) or self.model
        reported = getattr(chunk, "usage", None)
        if reported is not None and reported.prompt_tokens is not None:
            self.usage = Usage.of_call(self.model, reported.prompt_tokens,
                                       reported.completion_tokens or 0)
        text = ""
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            self.finish_reason = getattr(choice, "finish_reason", None) or self.finish_reason
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            text += delta.content or ""
            for call in getattr(delta, "tool_calls", None) or []:
                entry = self._calls.setdefault(call.index, ["", "", ""])
                entry[0] = call.id or entry[0]
                function = call.function
                if function is not None:
                    entry[1] += function.name or ""
                    entry[2] += function.arguments or ""
        if text:
            self.parts.append(text)
            self.chars += len(text)
        return text

    def reply(self) -> LLMReply:
        """The whole reply; no usage when the server sent none (``achat`` counts it)."""
        calls = [ToolCall(id=call_id or f"call_{index}", name=name,
                          arguments=_decode_arguments(arguments))
                 for index, (call_id, name, arguments) in sorted(self._calls.items())]
        return LLMReply(content="".join(self.parts), finish_reason=self.finish_reason,
                        usage=self.usage, model=self.model, tool_calls=calls)


def _is_event_stream(stream: Any) -> bool:
    response = getattr(stream, "response", None)
    content_type = response.headers.get("content-type", "") if response is not None else ""
    return "text/event-stream" in content_type.lower()


def _retried_status(status: int) -> bool:
    """The statuses the SDK retries (``max_retries``): the provider may answer later."""
    return status in (408, 409, 429) or status >= 500


def _schema_name(json_schema: dict[str, Any]) -> str:
    title = json_schema.get("title")
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", title)[:64] if isinstance(title, str) else ""
    return name or "output"


def _decode_arguments(raw: str | None) -> dict[str, Any]:
    """Tool-call arguments as a dict; malformed JSON is repaired, anything else is ``{}``."""
    if not raw:
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        import json_repair  # only malformed arguments need it: imported then

        decoded = json_repair.loads(raw)
    return decoded if isinstance(decoded, dict) else {}


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _BODY_SNIPPET_CHARS:
        return text[:_BODY_SNIPPET_CHARS] + "…"
    return text or "(empty body)"
