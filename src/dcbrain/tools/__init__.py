"""Tools: Python functions and JSON-Schema-described callables a plan may call.

- :mod:`~dcbrain.tools.tool`: :class:`Tool`, :class:`SchemaTool`, ``@tool``.
- :mod:`~dcbrain.tools.options`: :class:`CallOptions`, the per-call options every callable
  holds, each option's check and their one merge rule.
- :mod:`~dcbrain.tools.data`: results and examples as plan data (JSON-like, scalars kept).
- :mod:`~dcbrain.tools.schemas`: what a tool derives from its function (argument schema,
  result shape).
- :mod:`~dcbrain.tools.docstrings`: parameter descriptions read from docstrings.
"""

from __future__ import annotations

from dcbrain.tools.data import (
    check_json_like,
    checked_example,
    to_json_data,
)
from dcbrain.tools.options import (
    ApprovalRule,
    CallOptions,
    checked_approval_rule,
    checked_timeout,
    names_of,
    needs_approval,
    option,
    set_call_rules,
    within_timeout,
)
from dcbrain.tools.schemas import (
    PlanJsonSchema,
)
from dcbrain.tools.tool import (
    SchemaTool,
    Tool,
    ToolLike,
    ToolProvider,
    as_tool,
    tool,
)

__all__ = [
    "ApprovalRule",
    "CallOptions",
    "PlanJsonSchema",
    "SchemaTool",
    "Tool",
    "ToolLike",
    "ToolProvider",
    "as_tool",
    "check_json_like",
    "checked_approval_rule",
    "checked_example",
    "checked_timeout",
    "names_of",
    "needs_approval",
    "option",
    "set_call_rules",
    "to_json_data",
    "tool",
    "within_timeout",
]
