"""Chains: prompts, Chain, ChainResult, SeqChains/ParallelChains, run-time construction."""

from dcbrain.chain.chain import Chain
from dcbrain.chain.construct import construct_chain
from dcbrain.chain.containers import Chains, ParallelChains, SeqChains
from dcbrain.chain.intermediate import (
    intermediate_results_added,
    merge_intermediate_results,
    read_intermediate_results,
)
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

__all__ = [
    "AdditionalInfoPrompt",
    "BasePrompt",
    "Chain",
    "ChainOutput",
    "ChainResult",
    "Chains",
    "ChainsIntermediatePrompt",
    "JSONExamplePrompt",
    "KnowledgePrompt",
    "MemoPrompt",
    "ParallelChains",
    "PromptContext",
    "SeqChains",
    "TemplatePrompt",
    "construct_chain",
    "intermediate_results_added",
    "json_example",
    "merge_intermediate_results",
    "read_intermediate_results",
]
