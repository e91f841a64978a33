"""Prompts: the pieces a chain renders into chat messages.

Templates are Jinja2 (``{{ topic }}``, the default) or f-string style (``{topic}``).
Jinja2 templates render in a sandbox with ``StrictUndefined``, so a variable the caller
did not give is an error, never a silent blank; f-string templates behave the same and
allow ``{a.b}`` / ``{a[0]}`` lookups in dicts and lists (and nothing else). Dicts and
lists render as JSON.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jinja2

from dcbrain.chain._templates import PLAN_TEMPLATE_FILTERS as PLAN_TEMPLATE_FILTERS
from dcbrain.chain._templates import (
    DataFormatter,
    compile_jinja,
    fstring_variables,
    jinja_variables,
)
from dcbrain.chain._templates import check_substitutions_only as check_substitutions_only
from dcbrain.chain.intermediate import missing_intermediate_results, read_intermediate_results
from dcbrain.exceptions import TFChainError, TFPromptVariableError
from dcbrain.messages import TextMessage
from dcbrain.values.jsonsafe import dumps

TemplateFormat = Literal["jinja2", "f-string"]
_logger = logging.getLogger(__name__)

Knowledge = str | Sequence[Any] | None


@dataclass
class PromptContext:
    """What prompts render from: the current input, the conversation and the knowledge."""

    current_input: TextMessage
    conversation: list[TextMessage] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    #: what prompts left out, and why: the chain puts it in its result's logs
    notes: list[str] = field(default_factory=list)

    def template_variables(self) -> dict[str, Any]:
        """``input``/``current_input`` (the content) overlaid by ``additional_kwargs``."""
        content = self.current_input.content
        return {"input": content, "current_input": content, **self.current_input.additional_kwargs}

    def chains_intermediate_results(self) -> dict[str, Any]:
        """The decoded ``__chains_intermediate_results`` of the current input (``{}`` if none)."""
        return read_intermediate_results(self.current_input.additional_kwargs)


def normalize_knowledge(knowledge: Knowledge) -> list[str]:
    """Knowledge as a list of texts: a str is one item, dicts and lists become JSON."""
    if knowledge is None:
        return []
    if isinstance(knowledge, str):
        return [knowledge] if knowledge.strip() else []
    return [_as_text(item) for item in knowledge]


class BasePrompt(ABC):
    """Renders zero or more chat messages from a :class:`PromptContext`."""

    role: str = "user"

    def input_variables(self) -> frozenset[str]:
        """Names the caller must pass as keyword arguments (advertised to the planner)."""
        return frozenset()

    @abstractmethod
    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        """The messages of this prompt; an empty list when it has nothing to say."""


class TemplatePrompt(BasePrompt):
    """A Jinja2 or f-string template rendered into one message of ``role``.

    Subclasses choose the variables in :meth:`variables_for`.
    """

    def __init__(
        self,
        template: str,
        *,
        template_format: TemplateFormat = "jinja2",
        role: str = "user",
    ) -> None:
        self.template = template
        self.template_format: TemplateFormat = template_format
        self.role = role
        if template_format == "jinja2":
            self._jinja = compile_jinja(template)
            self.variables = jinja_variables(template)
        elif template_format == "f-string":
            self.variables = fstring_variables(template)
        else:
            raise TFChainError(
                f"unknown template_format {template_format!r}: use 'jinja2' or 'f-string'"
            )

    def __repr__(self) -> str:
        preview = self.template if len(self.template) <= 40 else self.template[:39] + "…"
        return f"{type(self).__name__}({preview!r})"

    @abstractmethod
    def variables_for(self, context: PromptContext) -> dict[str, Any]:
        """The template variables available in ``context``."""

    def render(self, variables: Mapping[str, Any]) -> str:
        """The template filled with ``variables``; a missing one raises TFPromptVariableError."""
        if self.template_format == "f-string":
            return DataFormatter().vformat(self.template, (), variables)
        try:
            return self._jinja.render(dict(variables))
        except jinja2.UndefinedError as exc:
            available = ", ".join(sorted(name for name in variables if not name.startswith("__")))
            raise TFPromptVariableError(
                f"prompt template: {exc.message} (available: {available or 'none'})"
            ) from None
        except jinja2.TemplateError as exc:
            raise TFChainError(f"prompt template failed to render: {exc}") from None

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        text = self.render(self.variables_for(context))
        return [{"role": self.role, "content": text}] if text.strip() else []


class AdditionalInfoPrompt(TemplatePrompt):
    """A template filled from the current input: its ``additional_kwargs`` (where a plan's
    call arguments land) plus ``input``/``current_input``, the input's text.

    A plain ``str`` prompt given to a :class:`~dcbrain.chain.Chain` becomes one of these.
    """

    def input_variables(self) -> frozenset[str]:
        return self.variables - {"current_input"}

    def variables_for(self, context: PromptContext) -> dict[str, Any]:
        return context.template_variables()


class ChainsIntermediatePrompt(TemplatePrompt):
    """Reads the results earlier chains left in ``__chains_intermediate_results``.

    The decoded dict is the template variable ``chains_intermediate_result``
    (``{{ chains_intermediate_result.summary }}`` or
    ``{chains_intermediate_result.summary}``). When a field the template needs is missing
    (the chain that writes it has not run), the whole prompt renders to nothing instead of
    failing the chain, and says so: a warning is logged and the chain's result logs name
    the missing field. With ``required=True`` the chain fails instead, naming it.
    """

    VARIABLE = "chains_intermediate_result"
    _PROVIDED = frozenset({VARIABLE, "input", "current_input"})

    def __init__(
        self,
        template: str,
        *,
        template_format: TemplateFormat = "jinja2",
        role: str = "user",
        required: bool = False,
    ) -> None:
        super().__init__(template, template_format=template_format, role=role)
        self.required = required
        unknown = self.variables - self._PROVIDED
        if unknown:
            raise TFChainError(
                f"ChainsIntermediatePrompt provides only {self.VARIABLE!r}, 'input' and "
                f"'current_input'; the template also uses {', '.join(sorted(map(repr, unknown)))}"
            )

    def variables_for(self, context: PromptContext) -> dict[str, Any]:
        content = context.current_input.content
        return {
            self.VARIABLE: context.chains_intermediate_results(),
            "input": content,
            "current_input": content,
        }

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        try:
            return super().to_messages(context)
        except TFPromptVariableError:
            missing = missing_intermediate_results(self.template,
                                                   context.chains_intermediate_results())
            if self.required:
                raise TFPromptVariableError(f"prompt {self!r}: intermediate result {missing}; "
                                            "the chain that writes it has not run") from None
            note = f"prompt {self!r} left out: intermediate result {missing}"
            _logger.warning(note)
            context.notes.append(note)
            return []


DEFAULT_KNOWLEDGE_TEMPLATE = """\
Knowledge that may help:
{% for item in knowledge %}- {{ item }}
{% endfor %}"""


class KnowledgePrompt(TemplatePrompt):
    """Knowledge and documents given to the run, as ``knowledge`` (a list of texts).

    Renders nothing when there is no knowledge.
    """

    def __init__(
        self,
        template: str = DEFAULT_KNOWLEDGE_TEMPLATE,
        *,
        template_format: TemplateFormat = "jinja2",
        role: str = "system",
    ) -> None:
        super().__init__(template, template_format=template_format, role=role)

    def variables_for(self, context: PromptContext) -> dict[str, Any]:
        return {**context.template_variables(), "knowledge": context.knowledge}

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        if not context.knowledge:
            return []
        return super().to_messages(context)


class MemoPrompt(TemplatePrompt):
    """The conversation so far.

    Without a template each earlier message becomes a chat message of its own role (the
    last ``max_messages`` of them). With a template, it renders ``conversation`` (a
    list of ``{"role", "content"}``) into one message.
    """

    def __init__(
        self,
        template: str | None = None,
        *,
        template_format: TemplateFormat = "jinja2",
        role: str = "user",
        max_messages: int | None = None,
    ) -> None:
        super().__init__(template or "", template_format=template_format, role=role)
        self.as_messages = template is None
        self.max_messages = max_messages

    def variables_for(self, context: PromptContext) -> dict[str, Any]:
        return {**context.template_variables(), "conversation": self._history(context)}

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        history = self._history(context)
        if not history:
            return []
        if self.as_messages:
            return history
        return super().to_messages(context)

    def _history(self, context: PromptContext) -> list[dict[str, Any]]:
        messages = context.conversation
        if self.max_messages is not None:
            messages = messages[-self.max_messages :] if self.max_messages > 0 else []
        return [
            {"role": _chat_role(message.role), "content": message.content} for message in messages
        ]


class JSONExamplePrompt(BasePrompt):
    """Tells the model to answer with JSON matching ``schema``, with an example."""

    def __init__(self, schema: Mapping[str, Any], *, role: str = "system") -> None:
        self.schema = dict(schema)
        self.role = role

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        text = (
            "Reply with only a JSON object, without any other text, that conforms to this "
            "JSON Schema:\n```json\n"
            + json.dumps(self.schema, ensure_ascii=False, indent=2)
            + "\n```\nFor example:\n```json\n"
            + json.dumps(json_example(self.schema), ensure_ascii=False)
            + "\n```"
        )
        return [{"role": self.role, "content": text}]


def json_example(schema: Mapping[str, Any], _depth: int = 0) -> Any:
    """A small value that matches ``schema``, to show the model the expected shape."""
    if _depth > 8:
        return None
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], Mapping):
            return json_example(options[0], _depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties", {})
        return {
            name: json_example(sub if isinstance(sub, Mapping) else {}, _depth + 1)
            for name, sub in properties.items()
        }
    if kind == "array":
        items = schema.get("items")
        return [json_example(items, _depth + 1)] if isinstance(items, Mapping) else []
    simple = {"string": "...", "integer": 0, "number": 0.0, "boolean": True, "null": None}
    return simple.get(kind, "...") if isinstance(kind, str) else "..."


def as_prompts(prompt: str | BasePrompt | Iterable[BasePrompt] | None) -> list[BasePrompt]:
    """A chain's ``prompt`` argument as a list of prompts (a str is a Jinja2 template)."""
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [AdditionalInfoPrompt(prompt)]
    if isinstance(prompt, BasePrompt):
        return [prompt]
    prompts = list(prompt)
    for item in prompts:
        if not isinstance(item, BasePrompt):
            raise TFChainError(f"a prompt must be a str or a BasePrompt, got {type(item).__name__}")
    return prompts


def _chat_role(role: str) -> str:
    return role if role in ("system", "user", "assistant") else "user"


def _as_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, TextMessage):
        return item.content
    return dumps(item)
