"""Chains built at run time: the factory behind tf_plan's ``__construct_chain`` (seed 000)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from dcbrain.chain.chain import DEFAULT_PROMPT, Chain, PromptArg
from dcbrain.chain.prompts import BasePrompt, JSONExamplePrompt
from dcbrain.llm.base import ChatLLM


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
    :class:`Chain` (``system_prompt``, ``result_cache_key``, ``tools`` …).
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


def _name_from_tags(tags: list[str]) -> str:
    slug = re.sub(r"[^0-9a-zA-Z_]+", "_", "_".join(tags)).strip("_").lower()
    return slug or "constructed_chain"


def _description_from_tags(tags: list[str]) -> str:
    if not tags:
        return "A chain constructed at run time."
    return f"A chain constructed at run time for: {', '.join(tags)}."
