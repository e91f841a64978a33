"""The plan–execute agent's deterministic planner and the demo tools it plans over (no model).

``DeterministicPlanner`` picks a plan from the last error alone::

    last_error is None        -> four steps: search, fetch, summarize, write_report
    last_error matches avoid  -> three steps that do not fetch (search snippets instead)
    last_error matches give_up-> two steps: write a partial report, notify
    otherwise                 -> []  (nothing left to try: the session ends "no_plan")

``demo_tools(fail={...})`` makes the tools fail on demand, so every path of the
executor can be driven: success, one replan, two replans, replan budget, step budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from dcbrain.agent.step import Step


class DeterministicPlanner:
    """A planner function whose plan depends only on the goal and the last error.

    ``avoid`` and ``give_up`` are regular expressions matched against ``last_error``
    (``timeout`` and ``quota`` by default). Returns the same plan every time it sees the
    same kind of error, which is how the replan budget gets tested.
    """

    def __init__(self, *, avoid: str = "timeout", give_up: str = "quota") -> None:
        self.avoid = re.compile(avoid, re.IGNORECASE)
        self.give_up = re.compile(give_up, re.IGNORECASE)

    def __call__(self, goal: str, history: list[Step], last_error: str | None) -> list[Step]:
        if last_error is None:
            return self.full_plan(goal)
        if self.avoid.search(last_error):
            return self.avoiding_plan(goal)
        if self.give_up.search(last_error):
            return self.give_up_plan(goal)
        return []

    @staticmethod
    def full_plan(goal: str) -> list[Step]:
        return [
            Step(1, "search", {"query": goal}, "a list of relevant page URLs"),
            Step(2, "fetch", {"url": _url(goal)}, "the text of the best page"),
            Step(3, "summarize", {"topic": goal}, "a short summary of the page"),
            Step(4, "write_report", {"title": goal}, "a report with the summary"),
        ]

    @staticmethod
    def avoiding_plan(goal: str) -> list[Step]:
        """Three steps that avoid fetching pages: summarize the search snippets."""
        return [
            Step(1, "search", {"query": goal}, "a list of relevant page URLs"),
            Step(3, "summarize", {"topic": goal, "source": "snippets"}, "a summary of snippets"),
            Step(4, "write_report", {"title": goal}, "a report with the summary"),
        ]

    @staticmethod
    def give_up_plan(goal: str) -> list[Step]:
        """Two steps that end gracefully: a partial report and a notice to a human."""
        return [
            Step(5, "write_report", {"title": goal, "status": "partial"}, "a partial report"),
            Step(6, "notify", {"message": f"could not finish: {goal}"}, "a human is told"),
        ]


def _url(goal: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", goal.lower()).strip("-") or "goal"
    return f"https://example.org/{slug}"


def demo_tools(
    fail: Mapping[str, str] | None = None, *, log: list[str] | None = None
) -> dict[str, Callable[..., Any]]:
    """The tools of :class:`DeterministicPlanner`'s plans; ``search`` is async.

    ``fail`` maps a tool name to the message of the ``RuntimeError`` it raises on every
    call. ``log``, when given, receives the name of each tool as it is called.
    """
    failures = dict(fail or {})
    calls = log if log is not None else []

    def enter(name: str) -> None:
        calls.append(name)
        if name in failures:
            raise RuntimeError(failures[name])

    async def search(query: str) -> list[str]:
        """Search the web; returns page URLs."""
        enter("search")
        return [_url(query), _url(query + " overview")]

    def fetch(url: str) -> str:
        """Fetch the text of a page."""
        enter("fetch")
        return f"text of {url}"

    def summarize(topic: str, source: str = "pages") -> str:
        """Summarize what is known about a topic, from fetched pages or search snippets."""
        enter("summarize")
        return f"summary of {topic} from {source}"

    def write_report(title: str, status: str = "complete") -> dict[str, str]:
        """Write the report."""
        enter("write_report")
        return {"title": title, "status": status}

    def notify(message: str) -> str:
        """Tell a human something."""
        enter("notify")
        return f"sent: {message}"

    return {
        "search": search,
        "fetch": fetch,
        "summarize": summarize,
        "write_report": write_report,
        "notify": notify,
    }
