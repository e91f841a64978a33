"""Chains built at run time: the factory behind tf_plan's ``__construct_chain``.

A plan may be written by a prompt-injected model, so what a plan passes is data, never
code: :func:`construct_plan_chain` takes only :data:`PLAN_KEYWORDS`, each a plain value of
its documented type, and a plan's prompt templates may only substitute values. The
arguments a plan's call passes that its prompts do not name follow them as delimited
data (:class:`CallDataPrompt`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from dcbrain.chain.chain import DEFAULT_PROMPT, Chain, PromptArg
from dcbrain.chain.prompts import (
    BasePrompt,
    JSONExamplePrompt,
    PromptContext,
    check_substitutions_only,
)
from dcbrain.chain.runnable import TEXT_KWARGS
from dcbrain.exceptions import TFChainError
from dcbrain.llm.base import ChatLLM
from dcbrain.tfplan import CallableSpec
from dcbrain.values.jsonsafe import dumps

#: The keywords of a plan's ``__construct_chain(...)`` and the JSON type of each.
PLAN_KEYWORDS: dict[str, dict[str, Any]] = {
    "output_schema": {"type": "object", "description": "JSON Schema of the chain's output"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "name": {"type": "string"},
    "description": {"type": "string"},
    "prompt": {"type": "string", "description": "template; {{ name }} substitutes the call's "
               "argument name (arguments it does not name follow it as data)"},
    "system_prompt": {"type": "string"},
}

#: What the checker knows of ``__construct_chain``: these keywords and no other.
CONSTRUCT_CHAIN_SPEC = CallableSpec(
    name="__construct_chain",
    description="Build a chain at run time on the default LLM.",
    parameters={"type": "object", "properties": PLAN_KEYWORDS, "additionalProperties": False},
    kind="function",
)

_PLAN_TYPES: dict[str, type] = {"object": dict, "array": list, "string": str}

# Chains built by plans, so a plan may rebuild its own but never replace a configured one.
_constructed: weakref.WeakSet[Chain] = weakref.WeakSet()


def construct_chain(
    llm: ChatLLM,
    output_schema: dict[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    name: str | None = None,
    description: str | None = None,
    prompt: PromptArg = None,
    **kwargs: Any,
) -> Chain:
    """A new chain on ``llm`` with only the prompts given here.

    Nothing is inherited from other chains: the prompts are ``prompt`` (default: the input
    text, a plan passes it as ``input=...``), preceded, when ``output_schema`` is given, by
    a prompt showing the schema and a JSON example; the schema is also the chain's
    ``output_json_schema`` (the LLM's structured-output format). ``kwargs`` go to
    :class:`Chain` (``system_prompt``, ``result_cache_key``, ``tools`` …). For Python code;
    plans go through :func:`construct_plan_chain`.
    """
    tag_list = [str(tag) for tag in tags or []]
    chain = Chain(
        name=name or _name_from_tags(tag_list),
        description=description or _description_from_tags(tag_list),
        llm=llm,
        prompt=DEFAULT_PROMPT if prompt is None else prompt,
        output_json_schema=output_schema,
        tags=tag_list,
        **kwargs,
    )
    if chain.output_json_schema is not None:
        example: list[BasePrompt] = [JSONExamplePrompt(chain.output_schema)]
        chain.set_prompts(example + chain.prompts, system_prompt=chain.system_prompt)
    return chain


def construct_plan_chain(llm: ChatLLM, arguments: Mapping[str, Any]) -> Chain:
    """``__construct_chain(**arguments)`` from a plan: only :data:`PLAN_KEYWORDS`, as data.

    Raises :class:`TFChainError` naming an unknown keyword, a value of the wrong type, or a
    prompt that is template code (loops, calls, operators) rather than substitutions.
    """
    unknown = sorted(set(arguments) - set(PLAN_KEYWORDS))
    if unknown:
        raise TFChainError(
            f"__construct_chain has no argument {unknown[0]!r} "
            f"(expected: {', '.join(PLAN_KEYWORDS)})"
        )
    for key, value in arguments.items():
        expected = _PLAN_TYPES[PLAN_KEYWORDS[key]["type"]]
        if value is not None and not isinstance(value, expected):
            raise TFChainError(f"__construct_chain argument {key!r} must be "
                               f"{PLAN_KEYWORDS[key]['type']}, got {type(value).__name__}")
    tags = arguments.get("tags") or []
    if not all(isinstance(tag, str) for tag in tags):
        raise TFChainError("__construct_chain argument 'tags' must be a list of strings")
    prompt = arguments.get("prompt")
    system_prompt = arguments.get("system_prompt")
    for key, template in (("prompt", prompt), ("system_prompt", system_prompt)):
        if template is not None:
            check_substitutions_only(template, f"__construct_chain {key}")
    chain = construct_chain(
        llm,
        output_schema=arguments.get("output_schema"),
        tags=tags,
        name=arguments.get("name"),
        description=arguments.get("description"),
        prompt=prompt,
        system_prompt=system_prompt,
    )
    referenced: set[str] = set()
    for part in [*chain.prompts, chain.system_prompt]:
        if part is not None:
            referenced |= part.input_variables()
    chain.add_prompt(CallDataPrompt(frozenset(referenced)))
    _constructed.add(chain)
    return chain


#: Where a plan's call of a constructed chain lists its arguments (for :class:`CallDataPrompt`).
CALL_ARGUMENTS = "_call_arguments"


class CallDataPrompt(BasePrompt):
    """The arguments of a plan's call that the chain's prompts do not name, after them,
    each between ``<data name="...">`` and ``</data>``: a chain a plan built gets the data
    it is called with even when its prompt names none of it."""

    def __init__(self, referenced: frozenset[str]) -> None:
        self.referenced = referenced

    def to_messages(self, context: PromptContext) -> list[dict[str, Any]]:
        info = context.current_input.additional_kwargs
        names = info.get(CALL_ARGUMENTS)
        if not isinstance(names, list):
            return []
        shown = [name for name in names if name not in self.referenced and name in info]
        if self.referenced & {"input", "current_input"}:
            # the input text is one text argument, else all the arguments as JSON
            text_argument = next((name for name in TEXT_KWARGS if name in names), None)
            shown = [] if text_argument is None else \
                [name for name in shown if name != text_argument]
        if not shown:
            return []
        parts = ["The data of this task, each item between its <data> markers:"]
        for name in shown:
            value = info[name]
            text = value if isinstance(value, str) else dumps(value)
            text = text.replace("</data>", "<\\/data>")
            parts.append(f'<data name="{name}">\n{text}\n</data>')
        return [{"role": "user", "content": "\n".join(parts)}]


def built_by_plan(chain: object) -> bool:
    """Whether ``chain`` was built by a plan's ``__construct_chain``."""
    return isinstance(chain, Chain) and chain in _constructed


def _name_from_tags(tags: list[str]) -> str:
    slug = re.sub(r"[^0-9a-zA-Z_]+", "_", "_".join(tags)).strip("_").lower()
    return slug or "constructed_chain"


def _description_from_tags(tags: list[str]) -> str:
    if not tags:
        return "A chain constructed at run time."
    return f"A chain constructed at run time for: {', '.join(tags)}."
