"""The stages of a plan's call, one at a time, and the constant/per-run split of the
interpreter (PlanCallables made once, RunScope per run)."""

from __future__ import annotations

from typing import Any

import pytest

from dcbrain.chain import TFChainInterpreter
from dcbrain.chain.call_pipeline import (
    announce_stage,
    approval_stage,
    gate_stage,
    invoke_async,
    invoke_async_retrying,
    invoke_sync,
    invoke_sync_retrying,
    invoker_for,
    journal_stage,
    policy_stage,
)
from dcbrain.chain.plan_callables import PlanCallables, RunScope
from dcbrain.journal import CallJournal, JournalEntry
from dcbrain.policies import Deny, PolicyCall
from dcbrain.tfplan import TFApprovalDenied, TFPolicyDenied
from dcbrain.tools import Tool


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def aadd(a: int, b: int) -> int:
    """Add two numbers, asynchronously."""
    return a + b


def refuse(call: PolicyCall) -> Deny:
    return Deny("never")


def exploding(call: PolicyCall) -> Deny:
    raise AssertionError("the policy stage must not run policies here")


def test_journal_stage_without_a_journal_gives_no_key() -> None:
    site = TFChainInterpreter({}, tools=[add], isolation="inprocess")
    assert journal_stage(site, "add", {"a": 1, "b": 2}, True) == (None, None)


def test_journal_stage_finds_the_entry_of_an_earlier_attempt_unless_not_reused() -> None:
    journal = CallJournal()
    first = TFChainInterpreter({}, tools=[add], isolation="inprocess", journal=journal)
    first.evaluate("add(a=1, b=2)")
    again = TFChainInterpreter({}, tools=[add], isolation="inprocess", journal=journal,
                               attempt=1)
    key, entry = journal_stage(again, "add", {"a": 1, "b": 2}, True)
    assert key is not None and key.attempt == 1
    assert isinstance(entry, JournalEntry) and entry.result == 3
    fresh = TFChainInterpreter({}, tools=[add], isolation="inprocess", journal=journal,
                               attempt=1)
    _, entry = journal_stage(fresh, "add", {"a": 1, "b": 2}, False)
    assert entry is None


def test_policy_stage_runs_no_policy_when_the_mode_is_off() -> None:
    tool = Tool(add, policies=[exploding])
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess", policy_mode="off")
    assert policy_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None) is None


def test_policy_stage_leaves_read_only_tools_alone() -> None:
    tool = Tool(add, policies=[exploding], side_effects=False)
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess")
    assert policy_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None) is None


def test_policy_stage_returns_the_refusal() -> None:
    tool = Tool(add, policies=[refuse])
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess")
    refused = policy_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None)
    assert isinstance(refused, TFPolicyDenied) and "never" in str(refused)


def test_approval_stage_denies_when_nobody_can_be_asked() -> None:
    tool = Tool(add, requires_approval=True)
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess")
    denied = approval_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None)
    assert isinstance(denied, TFApprovalDenied)
    plain = Tool(add)
    assert approval_stage(site, "tool", "add", plain, {"a": 1, "b": 2}, None) is None


def test_approval_stage_asks_the_predicate_with_the_arguments() -> None:
    seen: list[dict[str, Any]] = []

    def big(arguments: dict[str, Any]) -> bool:
        seen.append(arguments)
        return bool(arguments["a"] > 10)

    tool = Tool(add, requires_approval=big)
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess")
    assert approval_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None) is None
    assert isinstance(approval_stage(site, "tool", "add", tool, {"a": 11, "b": 2}, None),
                      TFApprovalDenied)
    assert seen == [{"a": 1, "b": 2}, {"a": 11, "b": 2}]


def test_gate_stage_lets_policies_decide_before_approval() -> None:
    tool = Tool(add, requires_approval=True, policies=[refuse])
    site = TFChainInterpreter({}, tools=[tool], isolation="inprocess")
    assert isinstance(gate_stage(site, "tool", "add", tool, {"a": 1, "b": 2}, None),
                      TFPolicyDenied)


def test_announce_stage_counts_a_reused_call_without_an_observer() -> None:
    journal = CallJournal()
    TFChainInterpreter({}, tools=[add], isolation="inprocess",
                       journal=journal).evaluate("add(a=1, b=2)")
    site = TFChainInterpreter({}, tools=[add], isolation="inprocess", journal=journal,
                              attempt=1)
    key, entry = journal_stage(site, "add", {"a": 1, "b": 2}, True)
    scope = site._scope()
    assert announce_stage(site, "tool", key, entry) is None
    assert scope.reused == 0  # outside a run each call gets a scope of its own
    result = site.evaluate("add(a=1, b=2)")
    assert result.value == 3 and result.reused_calls == 1


@pytest.mark.parametrize(("func", "retries", "expected"), [
    (add, 0, invoke_sync), (aadd, 0, invoke_async),
    (add, 2, invoke_sync_retrying), (aadd, 2, invoke_async_retrying)])
def test_the_invoke_stage_is_picked_once_per_tool(func: Any, retries: int,
                                                  expected: Any) -> None:
    assert invoker_for(Tool(func, retries=retries)) is expected


def test_plan_callables_compute_specs_once_and_serve_every_run() -> None:
    callables = PlanCallables({}, tools=[add], isolation="inprocess")
    specs = callables.base_specs
    assert callables.base_specs is specs
    described = callables.describe()
    assert [item["name"] for item in described] == ["add"]
    for attempt in range(2):
        interpreter = TFChainInterpreter.of(callables, RunScope(attempt=attempt))
        assert interpreter.describe_callables() == described
        assert interpreter.evaluate("add(a=2, b=3)").value == 5
    assert callables.base_specs is specs
    assert described == TFChainInterpreter({}, tools=[add],
                                           isolation="inprocess").describe_callables()


def test_run_scope_carries_the_journal_and_attempt() -> None:
    journal = CallJournal()
    callables = PlanCallables({}, tools=[add], isolation="inprocess")
    TFChainInterpreter.of(callables, RunScope(journal=journal, run_id="r")).evaluate(
        "add(a=1, b=1)")
    second = TFChainInterpreter.of(callables, RunScope(journal=journal, attempt=1,
                                                       run_id="r")).evaluate("add(a=1, b=1)")
    assert second.value == 2 and second.reused_calls == 1
