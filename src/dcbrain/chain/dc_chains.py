"""DCChains: sub-chains orchestrated at run time by a generated tf_plan script.

A run asks ``orchestrate_chain`` for a ```tf_plan block, checks and runs it with a
:class:`TFChainInterpreter` over ``chains_map`` and ``tools``, and returns the
accumulated :class:`ChainResult`. A failed attempt (no block, syntax, check or runtime
error) is handed back to the orchestrator with its error, up to ``max_plan_times``
attempts; then :class:`TFOrchestrationError` (a ``ValueError``) carries every failed
script and reason. Tokens of failed attempts are kept in the usage.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from dcbrain.chain._announce import PlanCallObserver
from dcbrain.chain._usage import UsageCollector
from dcbrain.chain.chain import Chain
from dcbrain.chain.containers import Chains
from dcbrain.chain.orchestrate import (
    DEFAULT_ABILITIES_PURPOSE,
    ChainContext,
    default_orchestrate_chain,
)
from dcbrain.chain.plan_names import check_plan_names
from dcbrain.chain.prompts import normalize_knowledge
from dcbrain.chain.result import ChainResult
from dcbrain.chain.runnable import ChainRun
from dcbrain.chain.tf_interpreter import TFChainInterpreter, partial_chain_result
from dcbrain.exceptions import TFChainError, TFOrchestrationError
from dcbrain.llm.base import ChatLLM
from dcbrain.llm.observe import observe_llm_calls
from dcbrain.messages import TextMessage, as_message
from dcbrain.tfplan import Limits, TFInterpreterError, extract_plan
from dcbrain.tools import Tool, ToolLike, as_tool

OrchestrateChain = Callable[
    [ChainContext, "DCChains", list[str], list[str]], str | Awaitable[str]
]
"""``orchestrate_chain(ctx, dc_chains, failed_plans, failed_infos)`` returns a ```tf_plan block."""

NO_PLAN_BLOCK = "no tf_plan block: the reply must contain the script in a ```tf_plan block"


class DCChains(Chains):
    """Chains composed at run time by a tf_plan script.

    ``chains_map`` names the sub-chains as the plan calls them; ``tools`` are callable
    from the plan too. ``orchestrate_chain`` writes the plan (default: ask ``llm`` with
    :func:`~dcbrain.chain.orchestrate.default_orchestrate_chain`); ``llm`` also backs
    ``__construct_chain``. ``neural``/``conversation_id`` enable the new-input safe point
    before each sub-chain call.
    """

    DESCRIPTION = "Orchestrates its sub-chains dynamically with a generated tf_plan script."

    def __init__(
        self,
        chains_map: Mapping[str, Chain | Chains],
        *,
        orchestrate_chain: OrchestrateChain | None = None,
        llm: ChatLLM | None = None,
        tools: Sequence[ToolLike] = (),
        max_plan_times: int = 3,
        name: str | None = None,
        description: str | None = None,
        abilities_purpose: str | None = DEFAULT_ABILITIES_PURPOSE,
        limits: Limits | None = None,
        observer: PlanCallObserver | None = None,
        neural: Any | None = None,
        conversation_id: str | None = None,
    ) -> None:
        super().__init__(list(chains_map.values()), name=name,
                         description=self.DESCRIPTION if description is None else description)
        if not isinstance(max_plan_times, int) or max_plan_times < 1:
            raise TFChainError(f"{self.name!r}: max_plan_times must be a positive int, "
                               f"got {max_plan_times!r}")
        self.max_plan_times = max_plan_times
        self.chains_map: dict[str, Chain | Chains] = dict(chains_map)
        self.orchestrate_chain: OrchestrateChain = orchestrate_chain or default_orchestrate_chain
        self.llm = llm
        self.tools: list[Tool] = [as_tool(item) for item in tools]
        check_plan_names(self.chains_map, self.tools)  # refused now, not at the first run
        self.abilities_purpose = abilities_purpose
        self.limits = limits
        self.observer = observer
        self.neural = neural
        self.conversation_id = conversation_id

    @property
    def input_schema(self) -> dict[str, Any]:
        """A DCChains takes its task as text: ``input``."""
        return {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "the task to solve"}},
            "required": ["input"],
        }

    @property
    def output_schema(self) -> dict[str, Any]:
        """The value of the plan: text, or an object (other values as ``{"result": ...}``)."""
        return {"type": ["string", "object"]}

    def interpreter(self, ctx: ChainContext | None = None) -> TFChainInterpreter:
        """The interpreter of one attempt; its ``additional_info`` is the input's, by reference.

        The plan may call ``chains_map``, ``tools`` and the tools given to the run.
        """
        current = ctx.current_input if ctx is not None else TextMessage("")
        own = {tool.name for tool in self.tools}
        extra = [tool for tool in ctx.tools if tool.name not in own] if ctx is not None else []
        return TFChainInterpreter(
            self.chains_map,
            tools=[*self.tools, *extra],
            additional_info=current.additional_kwargs,
            limits=self.limits,
            default_llm=self.llm,
            conversation=ctx.conversation if ctx is not None else None,
            knowledge=ctx.knowledge if ctx is not None else None,
            observer=self.observer,
            neural=self.neural,
            conversation_id=self.conversation_id,
        )

    def describe_callables(self) -> list[dict[str, Any]]:
        """Every sub-chain and tool as the planner sees it (name, kind, description, schemas)."""
        return self.interpreter().describe_callables()

    async def _async_run(self, run: ChainRun) -> ChainResult:
        ctx = ChainContext(
            current_input=run.current_input,
            conversation=[as_message(item) for item in run.conversation or []],
            knowledge=normalize_knowledge(run.knowledge),
            tools=[as_tool(item) for item in run.tools or []],
            intermediate_msgs=[
                item.to_openai() if isinstance(item, TextMessage) else dict(item)
                for item in run.intermediate_msgs or []
            ],
        )
        chain_res = ChainResult(origin=run.current_input)
        failed_plans: list[str] = []
        failed_infos: list[str] = []
        for attempt in range(1, self.max_plan_times + 1):
            reply = await self._orchestrate(ctx, failed_plans, failed_infos, chain_res)
            script = extract_plan(reply)
            if script is None:
                self._failed(chain_res, attempt, reply, NO_PLAN_BLOCK, failed_plans, failed_infos)
                continue
            chain_res.logs.append(f"DCChains {self.name!r}: plan {attempt}:\n{script}")
            try:
                console_res = await self.interpreter(ctx).aevaluate(script)
            except TFInterpreterError as exc:
                partial = partial_chain_result(exc)
                if partial is not None:
                    chain_res.usage += partial.usage
                    chain_res.logs.extend(partial.logs)
                self._failed(chain_res, attempt, script, str(exc), failed_plans, failed_infos)
                continue
            chain_res += console_res.chain_result
            return chain_res
        raise TFOrchestrationError(
            f"DCChains {self.name!r}: no plan succeeded in {self.max_plan_times} attempts; "
            f"last error: {failed_infos[-1]}",
            failed_plans=failed_plans,
            failed_infos=failed_infos,
            usage=chain_res.usage,
            result=chain_res,
        )

    async def _orchestrate(
        self,
        ctx: ChainContext,
        failed_plans: list[str],
        failed_infos: list[str],
        chain_res: ChainResult,
    ) -> str:
        """The orchestrator's reply; the tokens it spends count in ``chain_res``."""
        collector = UsageCollector.under_current()
        try:
            with observe_llm_calls(collector):
                reply = self.orchestrate_chain(ctx, self, list(failed_plans), list(failed_infos))
                if inspect.isawaitable(reply):
                    reply = await reply
        finally:
            chain_res.usage += collector.total
        if not isinstance(reply, str):
            raise TFChainError(f"DCChains {self.name!r}: orchestrate_chain must return a str, "
                               f"got {type(reply).__name__}")
        return reply

    def _failed(
        self,
        chain_res: ChainResult,
        attempt: int,
        plan: str,
        reason: str,
        failed_plans: list[str],
        failed_infos: list[str],
    ) -> None:
        failed_plans.append(plan)
        failed_infos.append(reason)
        chain_res.logs.append(f"DCChains {self.name!r}: plan {attempt} failed: {reason}")
