"""dcbrain: LLM agents that plan in code.

The public names are imported on first use (``from dcbrain import DCBrain`` works as
usual): importing the package, or only ``dcbrain.tfplan`` or the CLI, stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.agent import PlanDiff, PlanExecuteAgent, SessionResult, Step
    from dcbrain.brain import (
        DEFAULT_PLANNING_TEMPLATE,
        DEFAULT_VALIDATE_TEMPLATE,
        BaseBrain,
        BrainContext,
        BrainResult,
        BrainRun,
        DCBrain,
    )
    from dcbrain.chain import (
        AdditionalInfoPrompt,
        Chain,
        ChainContext,
        ChainResult,
        Chains,
        ChainsIntermediatePrompt,
        DCChains,
        KnowledgePrompt,
        MemoPrompt,
        ParallelChains,
        SeqChains,
        TFChainInterpreter,
        construct_chain,
    )
    from dcbrain.journal import CallJournal, current_call
    from dcbrain.llm import ChatLLM, FunctionLLM, LLMReply, OpenAILLM, ScriptedLLM, ToolCall
    from dcbrain.memory import Memory, Recall, RunStore, SQLiteMemory, SQLiteRunStore
    from dcbrain.messages import TextMessage
    from dcbrain.neural import Neural
    from dcbrain.usage import Usage, merge_usages

__all__ = [
    "DEFAULT_PLANNING_TEMPLATE",
    "DEFAULT_VALIDATE_TEMPLATE",
    "AdditionalInfoPrompt",
    "BaseBrain",
    "BrainContext",
    "BrainResult",
    "BrainRun",
    "CallJournal",
    "Chain",
    "ChainContext",
    "ChainResult",
    "Chains",
    "ChainsIntermediatePrompt",
    "ChatLLM",
    "DCBrain",
    "DCChains",
    "FunctionLLM",
    "KnowledgePrompt",
    "LLMReply",
    "MemoPrompt",
    "Memory",
    "Neural",
    "OpenAILLM",
    "ParallelChains",
    "PlanDiff",
    "PlanExecuteAgent",
    "Recall",
    "RunStore",
    "SQLiteMemory",
    "SQLiteRunStore",
    "ScriptedLLM",
    "SeqChains",
    "SessionResult",
    "Step",
    "TFChainInterpreter",
    "TextMessage",
    "ToolCall",
    "Usage",
    "construct_chain",
    "current_call",
    "merge_usages",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AdditionalInfoPrompt": "dcbrain.chain",
    "BaseBrain": "dcbrain.brain",
    "BrainContext": "dcbrain.brain",
    "BrainResult": "dcbrain.brain",
    "BrainRun": "dcbrain.brain",
    "CallJournal": "dcbrain.journal",
    "current_call": "dcbrain.journal",
    "RunStore": "dcbrain.memory",
    "SQLiteRunStore": "dcbrain.memory",
    "Chain": "dcbrain.chain",
    "ChainContext": "dcbrain.chain",
    "ChainResult": "dcbrain.chain",
    "Chains": "dcbrain.chain",
    "ChainsIntermediatePrompt": "dcbrain.chain",
    "ChatLLM": "dcbrain.llm",
    "DCBrain": "dcbrain.brain",
    "DCChains": "dcbrain.chain",
    "DEFAULT_PLANNING_TEMPLATE": "dcbrain.brain",
    "DEFAULT_VALIDATE_TEMPLATE": "dcbrain.brain",
    "FunctionLLM": "dcbrain.llm",
    "KnowledgePrompt": "dcbrain.chain",
    "LLMReply": "dcbrain.llm",
    "MemoPrompt": "dcbrain.chain",
    "Memory": "dcbrain.memory",
    "Neural": "dcbrain.neural",
    "OpenAILLM": "dcbrain.llm",
    "ParallelChains": "dcbrain.chain",
    "PlanDiff": "dcbrain.agent",
    "PlanExecuteAgent": "dcbrain.agent",
    "Recall": "dcbrain.memory",
    "SQLiteMemory": "dcbrain.memory",
    "ScriptedLLM": "dcbrain.llm",
    "SeqChains": "dcbrain.chain",
    "SessionResult": "dcbrain.agent",
    "Step": "dcbrain.agent",
    "TFChainInterpreter": "dcbrain.chain",
    "TextMessage": "dcbrain.messages",
    "ToolCall": "dcbrain.llm",
    "Usage": "dcbrain.usage",
    "construct_chain": "dcbrain.chain",
    "merge_usages": "dcbrain.usage",
})
