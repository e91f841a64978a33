"""dcbrain: LLM agents that plan in code."""

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
from dcbrain.memory import Memory, Recall, SQLiteMemory
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
    "SQLiteMemory",
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
