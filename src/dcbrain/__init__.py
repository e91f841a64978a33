"""dcbrain: LLM agents that plan in code.

The public names are imported on first use (``from dcbrain import DCBrain`` works as
usual): importing the package, or only ``dcbrain.tfplan`` or the CLI, stays fast. Event
classes are imported from :mod:`dcbrain.events`, every exception from
:mod:`dcbrain.exceptions`; the parts behind these names (prompts, contexts, usage
helpers) stay importable from their own packages.
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
        BrainResult,
        BrainRun,
        DCBrain,
        Planner,
        PlanningContext,
        PlanReply,
    )
    from dcbrain.chain import (
        Chain,
        ChainResult,
        Chains,
        DCChains,
        ParallelChains,
        SeqChains,
        TFChainInterpreter,
        construct_chain,
    )
    from dcbrain.exceptions import TFBrainError, TFError
    from dcbrain.journal import CallJournal, current_call
    from dcbrain.llm import ChatLLM, FunctionLLM, LLMReply, OpenAILLM, ScriptedLLM, ToolCall
    from dcbrain.mcp import MCPTools
    from dcbrain.memory import Memory, Recall, RunStore, SQLiteMemory, SQLiteRunStore
    from dcbrain.messages import TextMessage
    from dcbrain.neural import Neural
    from dcbrain.tfplan import Limits
    from dcbrain.tools import Tool, tool
    from dcbrain.usage import Usage

__all__ = [
    "DEFAULT_PLANNING_TEMPLATE",
    "DEFAULT_VALIDATE_TEMPLATE",
    "BaseBrain",
    "BrainResult",
    "BrainRun",
    "CallJournal",
    "Chain",
    "ChainResult",
    "Chains",
    "ChatLLM",
    "DCBrain",
    "DCChains",
    "FunctionLLM",
    "LLMReply",
    "Limits",
    "MCPTools",
    "Memory",
    "Neural",
    "OpenAILLM",
    "ParallelChains",
    "PlanDiff",
    "PlanExecuteAgent",
    "PlanReply",
    "Planner",
    "PlanningContext",
    "Recall",
    "RunStore",
    "SQLiteMemory",
    "SQLiteRunStore",
    "ScriptedLLM",
    "SeqChains",
    "SessionResult",
    "Step",
    "TFBrainError",
    "TFChainInterpreter",
    "TFError",
    "TextMessage",
    "Tool",
    "ToolCall",
    "Usage",
    "construct_chain",
    "current_call",
    "tool",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "BaseBrain": "dcbrain.brain",
    "BrainResult": "dcbrain.brain",
    "BrainRun": "dcbrain.brain",
    "CallJournal": "dcbrain.journal",
    "current_call": "dcbrain.journal",
    "RunStore": "dcbrain.memory",
    "SQLiteRunStore": "dcbrain.memory",
    "Chain": "dcbrain.chain",
    "ChainResult": "dcbrain.chain",
    "Chains": "dcbrain.chain",
    "ChatLLM": "dcbrain.llm",
    "DCBrain": "dcbrain.brain",
    "DCChains": "dcbrain.chain",
    "DEFAULT_PLANNING_TEMPLATE": "dcbrain.brain",
    "DEFAULT_VALIDATE_TEMPLATE": "dcbrain.brain",
    "FunctionLLM": "dcbrain.llm",
    "LLMReply": "dcbrain.llm",
    "Limits": "dcbrain.tfplan",
    "MCPTools": "dcbrain.mcp",
    "Memory": "dcbrain.memory",
    "Neural": "dcbrain.neural",
    "OpenAILLM": "dcbrain.llm",
    "ParallelChains": "dcbrain.chain",
    "PlanDiff": "dcbrain.agent",
    "PlanExecuteAgent": "dcbrain.agent",
    "PlanReply": "dcbrain.brain",
    "Planner": "dcbrain.brain",
    "PlanningContext": "dcbrain.brain",
    "Recall": "dcbrain.memory",
    "SQLiteMemory": "dcbrain.memory",
    "ScriptedLLM": "dcbrain.llm",
    "SeqChains": "dcbrain.chain",
    "SessionResult": "dcbrain.agent",
    "Step": "dcbrain.agent",
    "TFBrainError": "dcbrain.exceptions",
    "TFChainInterpreter": "dcbrain.chain",
    "TFError": "dcbrain.exceptions",
    "TextMessage": "dcbrain.messages",
    "Tool": "dcbrain.tools",
    "ToolCall": "dcbrain.llm",
    "Usage": "dcbrain.usage",
    "construct_chain": "dcbrain.chain",
    "tool": "dcbrain.tools",
})
