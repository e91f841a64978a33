"""Plan–execute agents: typed steps, replanning from the cursor, plan diffs.

```python
from dcbrain.agent import PlanExecuteAgent, Step

agent = PlanExecuteAgent(planner=my_planner, tools={"search": search})
session = agent.run("goal")   # SessionResult(.status, .reason, .history, .revisions, .events)
```
"""

from dcbrain.agent.agent import (
    PlanExecuteAgent,
    PlanLike,
    Planner,
    SessionReason,
    SessionResult,
    SessionStatus,
    ToolAwarePlanner,
)
from dcbrain.agent.diff import PlanDiff
from dcbrain.agent.dispatcher import Dispatcher, FailurePolicy, OutcomeKind, StepOutcome
from dcbrain.agent.llm_planner import DEFAULT_INSTRUCTIONS, PLAN_JSON_SCHEMA, LLMPlanner
from dcbrain.agent.planners import DeterministicPlanner, demo_tools
from dcbrain.agent.refs import REF_KEY, resolve_references
from dcbrain.agent.step import GATHER, Step, StepStatus, validate_plan
from dcbrain.exceptions import TFReferenceError

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "GATHER",
    "PLAN_JSON_SCHEMA",
    "REF_KEY",
    "DeterministicPlanner",
    "Dispatcher",
    "FailurePolicy",
    "LLMPlanner",
    "OutcomeKind",
    "PlanDiff",
    "PlanExecuteAgent",
    "PlanLike",
    "Planner",
    "SessionReason",
    "SessionResult",
    "SessionStatus",
    "Step",
    "StepOutcome",
    "StepStatus",
    "TFReferenceError",
    "ToolAwarePlanner",
    "demo_tools",
    "resolve_references",
    "validate_plan",
]
