"""Chains: prompts, Chain, ChainResult, SeqChains/ParallelChains/DCChains, plans over chains."""

from dcbrain.chain._announce import PlanCall, PlanCallHooks, PlanCallObserver
from dcbrain.chain._plan_result import ChainConsoleResult
from dcbrain.chain.chain import Chain
from dcbrain.chain.construct import construct_chain
from dcbrain.chain.containers import Chains, ParallelChains, SeqChains
from dcbrain.chain.dc_chains import DCChains
from dcbrain.chain.intermediate import (
    intermediate_results_added,
    merge_intermediate_results,
    read_intermediate_results,
)
from dcbrain.chain.orchestrate import (
    TFPLAN_LANGUAGE_SUMMARY,
    ChainContext,
    default_orchestrate_chain,
    orchestrate_messages,
)
from dcbrain.chain.plan_callables import PlanCallables, RunScope
from dcbrain.chain.plan_names import check_plan_names
from dcbrain.chain.prompts import (
    AdditionalInfoPrompt,
    BasePrompt,
    ChainsIntermediatePrompt,
    JSONExamplePrompt,
    KnowledgePrompt,
    MemoPrompt,
    PromptContext,
    TemplatePrompt,
    json_example,
)
from dcbrain.chain.result import ChainOutput, ChainResult
from dcbrain.chain.tf_interpreter import TFChainInterpreter, partial_chain_result

__all__ = [
    "TFPLAN_LANGUAGE_SUMMARY",
    "AdditionalInfoPrompt",
    "BasePrompt",
    "Chain",
    "ChainConsoleResult",
    "ChainContext",
    "ChainOutput",
    "ChainResult",
    "Chains",
    "ChainsIntermediatePrompt",
    "DCChains",
    "JSONExamplePrompt",
    "KnowledgePrompt",
    "MemoPrompt",
    "ParallelChains",
    "PlanCall",
    "PlanCallHooks",
    "PlanCallObserver",
    "PlanCallables",
    "PromptContext",
    "RunScope",
    "SeqChains",
    "TFChainInterpreter",
    "TemplatePrompt",
    "check_plan_names",
    "construct_chain",
    "default_orchestrate_chain",
    "intermediate_results_added",
    "json_example",
    "merge_intermediate_results",
    "orchestrate_messages",
    "partial_chain_result",
    "read_intermediate_results",
]
