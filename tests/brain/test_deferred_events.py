"""A result's events are made from the run's log when first read, once."""

from __future__ import annotations

import dataclasses
from typing import Any

from dcbrain.brain.context import BrainResult, DeferredEvents
from dcbrain.usage import Usage


def _result(events: Any) -> BrainResult:
    return BrainResult(status="succeeded", reason="validated", final_result=1, plans=[],
                       last_result=1, suggestions=[], usage=Usage(), events=events,
                       conversation_id="c", run_id="r")


def test_deferred_events_are_made_once_on_first_read() -> None:
    made: list[int] = []

    def make() -> list[dict[str, Any]]:
        made.append(1)
        return [{"type": "final", "seq": 0}]

    result = _result(DeferredEvents(make))
    assert made == []
    assert result.events == [{"type": "final", "seq": 0}]
    assert result.events is result.events
    assert made == [1]
    assert result.to_dict()["events"] == [{"type": "final", "seq": 0}]
    assert dataclasses.asdict(result)["events"] == [{"type": "final", "seq": 0}]
    assert result == _result([{"type": "final", "seq": 0}])


def test_events_can_be_replaced_by_a_list() -> None:
    result = _result(DeferredEvents(lambda: [{"type": "final"}]))
    result.events = [{"type": "error"}, *result.events]
    assert result.events == [{"type": "error"}, {"type": "final"}]
    assert _result([]).events == []
