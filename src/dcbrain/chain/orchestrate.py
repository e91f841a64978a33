"""The default orchestrator of DCChains: an LLM writes the tf_plan script.

The prompt lists every sub-chain and tool with its description and input/output schema,
summarizes the tf_plan language, and shows the plans that failed before with their
errors so the next one avoids them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dcbrain.exceptions import TFChainError
from dcbrain.messages import TextMessage
from dcbrain.tfplan.language import language_summary
from dcbrain.tools import Tool

if TYPE_CHECKING:
    from dcbrain.chain.dc_chains import DCChains

#: The definition of tf_plan planning prompts show, generated from the language's tables.
TFPLAN_LANGUAGE_SUMMARY = language_summary()

DEFAULT_ABILITIES_PURPOSE = (
    "The current chain of thought is DCChains: solve the task by writing a tf_plan script "
    "that calls the sub-chains and tools below, passing results between them."
)

ORCHESTRATE_SYSTEM_TEMPLATE = """\
{abilities_purpose}

# The tf_plan language
{language}
# Chains and tools you can call
{callables}

Reply with exactly one ```tf_plan block whose script returns the answer."""


@dataclass
class ChainContext:
    """What a chain container works on during one run."""

    current_input: TextMessage
    conversation: list[TextMessage] = field(default_factory=list)
    knowledge: list[Any] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    intermediate_msgs: list[dict[str, Any]] = field(default_factory=list)


def orchestrate_messages(
    ctx: ChainContext,
    dc_chains: DCChains,
    failed_plans: Sequence[str],
    failed_infos: Sequence[str],
) -> list[dict[str, Any]]:
    """The chat messages the default orchestrator sends to its LLM."""
    callables = "\n".join(
        f"- {item['name']} ({item['kind']}): {item['description'] or 'no description'}\n"
        f"  input: {json.dumps(item['input_schema'], ensure_ascii=False)}\n"
        f"  output: {json.dumps(item['output_schema'], ensure_ascii=False)}"
        for item in dc_chains.interpreter(ctx).describe_callables()
    )
    system = ORCHESTRATE_SYSTEM_TEMPLATE.format(
        abilities_purpose=dc_chains.abilities_purpose or DEFAULT_ABILITIES_PURPOSE,
        language=TFPLAN_LANGUAGE_SUMMARY,
        callables=callables or "(none)",
    )
    task = f"Task:\n{ctx.current_input.content}"
    for number, (plan, info) in enumerate(zip(failed_plans, failed_infos, strict=True), 1):
        task += (f"\n\nFailed attempt {number}:\n```tf_plan\n{plan}\n```\nError:\n{info}")
    if failed_plans:
        task += "\n\nWrite a new plan that avoids these errors."
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


async def default_orchestrate_chain(
    ctx: ChainContext,
    dc_chains: DCChains,
    failed_plans: list[str],
    failed_infos: list[str],
) -> str:
    """Ask ``dc_chains.llm`` for a ```tf_plan block solving ``ctx.current_input``."""
    if dc_chains.llm is None:
        raise TFChainError(
            f"DCChains {dc_chains.name!r} has no llm to write plans: pass llm=... or "
            "orchestrate_chain=..."
        )
    messages = orchestrate_messages(ctx, dc_chains, failed_plans, failed_infos)
    reply = await dc_chains.llm.achat(messages)
    return reply.content
