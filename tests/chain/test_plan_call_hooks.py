"""Every plan call hook is declared on one base; an observer with only some gets the rest."""

from __future__ import annotations

from dcbrain.chain import PlanCall, PlanCallHooks
from dcbrain.chain._announce import plan_call_hooks


class OnlyStarts:
    def __init__(self) -> None:
        self.started: list[PlanCall] = []

    def on_call_start(self, call: PlanCall) -> None:
        self.started.append(call)

    def on_call_end(self, call: PlanCall) -> None:
        pass


def test_an_observer_with_some_hooks_is_completed_with_the_bases_no_ops() -> None:
    observer = OnlyStarts()
    hooks = plan_call_hooks(observer)
    assert isinstance(hooks, PlanCallHooks)
    assert hooks.on_call_start == observer.on_call_start
    assert hooks.trace_context.__func__ is PlanCallHooks.trace_context  # type: ignore[attr-defined]
    assert hooks.text_deltas.__func__ is PlanCallHooks.text_deltas  # type: ignore[attr-defined]


def test_a_hooks_subclass_is_used_as_it_is() -> None:
    class Mine(PlanCallHooks):
        pass

    mine = Mine()
    assert plan_call_hooks(mine) is mine
