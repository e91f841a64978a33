"""Plan–execute with replanning: the deterministic planner through every path.

Run it as it is (no model, no network): ``python examples/plan_execute.py``.
Each scenario makes some demo tools fail and prints the event stream; plan revisions
are printed as diffs (removed steps struck, added steps marked ``+``).
"""

from __future__ import annotations

import sys

from dcbrain.agent import DeterministicPlanner, PlanDiff, PlanExecuteAgent, Step, demo_tools
from dcbrain.events import Event

STYLE = "ansi" if sys.stdout.isatty() else "text"

SCENARIOS: list[tuple[str, dict[str, str], int]] = [
    ("linear success", {}, 12),
    ("fail mid-plan, replan once", {"fetch": "timeout after 5s"}, 12),
    ("replan twice, then give up gracefully", {"fetch": "timeout", "summarize": "quota"}, 12),
    ("an error the planner cannot handle", {"fetch": "HTTP 404"}, 12),
    ("the same bad plan again and again", {"fetch": "timeout", "summarize": "timeout"}, 12),
    ("step budget", {"fetch": "timeout"}, 3),
]


def show(event: Event) -> None:
    data = event.data
    if event.type == "plan_created":
        print("  plan:")
        for step in data["steps"]:
            print(f"    {Step.from_dict(step).describe()}  expect: {step['expected_outcome']}")
    elif event.type == "plan_revised":
        diff = PlanDiff.from_dict(event.data)
        print("  " + diff.render(STYLE).replace("\n", "\n    "))
    elif event.type == "step_started":
        print(f"  > step {data['step_id']} {data['tool_name']} (execution {data['execution']})")
    elif event.type == "step_finished":
        outcome = str(data["error"] or data["result"])
        print(f"  < step {data['step_id']} {data['status']}: {outcome[:70]}")
    elif event.type == "budget":
        print(f"  ! budget {data['budget']} spent ({data['used']}/{data['limit']})")
    elif event.type == "final":
        print(f"  = {data['status']}: {data['reason']}")


def main() -> None:
    for title, fail, max_steps in SCENARIOS:
        print(f"\n## {title}")
        agent = PlanExecuteAgent(
            DeterministicPlanner(),
            demo_tools(fail),
            max_steps=max_steps,
            on_event=show,
        )
        agent.run("compare async runtimes")

    print("\n## gather: two searches at once")
    plan = [
        Step.gather(1, [("search", {"query": "tokio"}), ("search", {"query": "async-std"})]),
        Step(2, "write_report", {"title": "runtimes"}, "a report"),
    ]
    session = PlanExecuteAgent(lambda goal, history, last_error: plan, demo_tools()).run("g")
    print(f"  gather results: {session.history[0].result}")
    print(f"  = {session.status}: {session.reason}")


if __name__ == "__main__":
    main()
