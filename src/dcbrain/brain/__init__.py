"""Brains: DCBrain plans in tf_plan, runs the plan, validates the result and replans."""

from dcbrain.brain.base import BaseBrain
from dcbrain.brain.budget import TokenBudget
from dcbrain.brain.context import BrainContext, BrainIntermediateResult, BrainResult
from dcbrain.brain.dc_brain import DCBrain
from dcbrain.brain.deps import RunDeps
from dcbrain.brain.plan_diff import PlanCall, ScriptDiff
from dcbrain.brain.planner import Planner, PlanReply, TemplatePlanner
from dcbrain.brain.planning import PlanningContext
from dcbrain.brain.run import BrainRun
from dcbrain.brain.templates import DEFAULT_PLANNING_TEMPLATE, DEFAULT_VALIDATE_TEMPLATE
from dcbrain.brain.trace import JSONLTrace, OTelSpans, RunRecorder

__all__ = [
    "DEFAULT_PLANNING_TEMPLATE",
    "DEFAULT_VALIDATE_TEMPLATE",
    "BaseBrain",
    "BrainContext",
    "BrainIntermediateResult",
    "BrainResult",
    "BrainRun",
    "DCBrain",
    "JSONLTrace",
    "OTelSpans",
    "PlanCall",
    "PlanReply",
    "Planner",
    "PlanningContext",
    "RunDeps",
    "RunRecorder",
    "ScriptDiff",
    "TemplatePlanner",
    "TokenBudget",
]
