"""Human approval in an in-process brain: a call declared ``requires_approval`` waits for
``approve``/``deny``; the plan runs again from its journal, so nothing runs twice."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.approvals import TIMED_OUT, ApprovalBoard, ApprovalRequest, args_hash
from dcbrain.brain import RunDeps
from dcbrain.exceptions import TFApprovalError, TFBrainError
from dcbrain.memory import SQLiteMemory
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict

ISOLATIONS: list[Isolation] = ["process", "inprocess"]


class Bank:
    """Counts every call, so a test sees what ran and how often."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def balance(self, account: str) -> int:
        """The balance of ``account``."""
        with self._lock:
            self.calls.append(("balance", account))
        return 500

    def send_money(self, recipient: str, amount: int) -> str:
        """Send ``amount`` to ``recipient``."""
        with self._lock:
            self.calls.append(("send_money", (recipient, amount)))
        return f"sent {amount} to {recipient}"

    def count(self, name: str) -> int:
        return sum(1 for called, _ in self.calls if called == name)


def bank_brain(bank: Bank, plans: list[Any], verdicts: list[Any], *,
               isolation: Isolation = "inprocess",
               rule: Any = True, **options: Any) -> DCBrain:
    tools = [Tool(bank.balance), Tool(bank.send_money, requires_approval=rule)]
    return DCBrain(default_llm=ScriptedLLM(plans), default_validate_llm=ScriptedLLM(verdicts),
                   tools=tools, isolation=isolation, **options)


PAY = ('b = balance(account="main")\n'
       'r = send_money(recipient="alice", amount=b // 5)\n'
       'return r')


def deciding(brain: DCBrain, decide: Callable[[DCBrain, dict[str, Any]], None]
             ) -> list[dict[str, Any]]:
    """Decide every request as it is announced (from another thread, as a person would)."""
    requests: list[dict[str, Any]] = []

    def on_event(event: Any) -> None:
        data = event.to_dict()
        if data["type"] == "approval_requested":
            requests.append(data)
            threading.Timer(0.05, decide, (brain, data)).start()

    brain.subscribe(on_event)
    return requests


def approve(brain: DCBrain, request: dict[str, Any]) -> None:
    brain.approve_sync(request["run_id"], request["call_id"], args_hash=request["args_hash"])


def of_type(result: Any, kind: str) -> list[dict[str, Any]]:
    return [event for event in result.events if event["type"] == kind]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_an_approved_call_runs_once_and_the_calls_before_it_are_not_made_again(
    isolation: Isolation,
) -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], isolation=isolation)
    requests = deciding(brain, approve)
    result = brain.run("pay alice a fifth of the balance", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "sent 100 to alice")
    assert bank.calls == [("balance", "main"), ("send_money", ("alice", 100))]
    [request] = requests
    assert request["tool"] == "send_money" and request["kind"] == "tool"
    assert request["arguments"] == {"recipient": "alice", "amount": 100}
    assert request["args_hash"] == args_hash({"recipient": "alice", "amount": 100})
    assert (request["line"], request["plan"]) == (2, PAY)
    assert "requires approval" in request["why"]
    [decided] = of_type(result, "approval_decided")
    assert (decided["call_id"], decided["approved"], decided["decided_by"]) == (
        request["call_id"], True, "user")
    types = [event["type"] for event in result.events]
    assert types.index("approval_requested") < types.index("approval_decided")
    assert result.iterations == 1  # the plan ran again without asking the planner again


def test_a_denied_call_fails_at_its_line_and_the_planner_replans_with_the_reason() -> None:
    bank = Bank()
    second = 'return "asked the user first"'
    planner = ScriptedLLM([plan(PAY), plan(second)])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(bank.balance), Tool(bank.send_money, requires_approval=True)],
                    isolation="inprocess")

    def deny(brain: DCBrain, request: dict[str, Any]) -> None:
        brain.deny_sync(request["run_id"], request["call_id"], reason="not this month")

    deciding(brain, deny)
    result = brain.run("pay alice", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "asked the user first")
    assert bank.count("send_money") == 0
    [finished] = [e for e in of_type(result, "plan_finished") if not e["ok"]]
    assert finished["error_kind"] == "TFApprovalDenied"
    assert "2:" in finished["error"] and "denied by the user: not this month" in \
        finished["error"]
    second_prompt = str(planner.calls[1])
    assert "denied by the user: not this month" in second_prompt
    [decided] = of_type(result, "approval_decided")
    assert (decided["approved"], decided["reason"]) == (False, "not this month")


def test_a_predicate_asks_only_for_the_calls_it_matches() -> None:
    bank = Bank()
    two = ('a = send_money(recipient="bob", amount=20)\n'
           'b = send_money(recipient="carol", amount=300)\n'
           'return [a, b]')
    brain = bank_brain(bank, [plan(two)], [verdict(True)],
                       rule=lambda args: args["amount"] > 100)
    requests = deciding(brain, approve)
    result = brain.run("pay bob and carol", conversation_id="c1")
    assert result.status == "succeeded"
    assert [r["arguments"] for r in requests] == [{"recipient": "carol", "amount": 300}]
    assert bank.count("send_money") == 2


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_two_approvals_in_one_parallel_are_asked_together(isolation: Isolation) -> None:
    bank = Bank()
    both = ('r = parallel(send_money(recipient="bob", amount=1), '
            'send_money(recipient="carol", amount=2))\n'
            'return r')
    brain = bank_brain(bank, [plan(both)], [verdict(True)], isolation=isolation)
    requests = deciding(brain, approve)
    result = brain.run("pay both", conversation_id="c1")
    assert result.status == "succeeded", result.error
    assert sorted(r["arguments"]["recipient"] for r in requests) == ["bob", "carol"]
    assert len({r["call_id"] for r in requests}) == 2
    assert bank.count("send_money") == 2


def test_nobody_deciding_in_time_denies_the_call_on_the_runs_clock() -> None:
    bank = Bank()
    now = [1000.0]
    board = ApprovalBoard()
    planner = ScriptedLLM([plan(PAY), plan('return "gave up"')])
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(bank.balance),
                           Tool(bank.send_money, requires_approval=True,
                                approval_timeout_s=3600)],
                    isolation="inprocess", approvals=board, approval_timeout_s=60)

    def later() -> None:
        now[0] += 3601  # an hour passes on the run's clock while it waits

    def on_event(event: Any) -> None:
        if event.to_dict()["type"] == "approval_requested":
            threading.Timer(0.2, later).start()

    brain.subscribe(on_event)
    result = asyncio.run(brain.async_run("pay", conversation_id="c1",
                                         deps=RunDeps(clock=lambda: now[0])))
    assert result.final_result == "gave up"
    [decided] = of_type(result, "approval_decided")
    assert (decided["approved"], decided["decided_by"], decided["reason"]) == (
        False, "timeout", TIMED_OUT)
    assert TIMED_OUT in str(planner.calls[1])
    assert bank.count("send_money") == 0


def test_a_replan_making_the_same_approved_call_is_not_asked_again() -> None:
    bank = Bank()
    # the first plan fails after its approved call; the replan makes the same call again
    first = ('r = send_money(recipient="alice", amount=5)\n'
             'x = 1 // 0\n'
             'return r')
    again = 'return send_money(recipient="alice", amount=5)'
    brain = bank_brain(bank, [plan(first), plan(again)], [verdict(True)])
    requests = deciding(brain, approve)
    result = brain.run("pay alice 5", conversation_id="c1")
    assert result.status == "succeeded"
    assert len(requests) == 1
    assert bank.count("send_money") == 1  # the replan got the journal's result


def test_a_denial_answers_the_identical_call_at_once_but_not_other_arguments() -> None:
    bank = Bank()
    first = 'return send_money(recipient="mallory", amount=900)'
    same = 'return send_money(recipient="mallory", amount=900)'
    other = 'return send_money(recipient="alice", amount=9)'
    brain = bank_brain(bank, [plan(first), plan(same), plan(other)], [verdict(True)])
    decisions: list[str] = []

    def decide(brain: DCBrain, request: dict[str, Any]) -> None:
        decisions.append(request["arguments"]["recipient"])
        if request["arguments"]["recipient"] == "mallory":
            brain.deny_sync(request["run_id"], request["call_id"], reason="unknown payee")
        else:
            approve(brain, request)

    deciding(brain, decide)
    result = brain.run("pay", conversation_id="c1")
    assert result.final_result == "sent 9 to alice"
    assert decisions == ["mallory", "alice"]  # the second mallory call was denied at once
    assert bank.calls == [("send_money", ("alice", 9))]


def test_deciding_what_nobody_waits_for_is_a_clear_error() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)])
    errors: list[TFApprovalError] = []

    def decide(brain: DCBrain, request: dict[str, Any]) -> None:
        for wrong in (lambda: brain.approve_sync(request["run_id"], "ap-nope"),
                      lambda: brain.approve_sync(request["run_id"], request["call_id"],
                                                 args_hash="0" * 64)):
            try:
                wrong()
            except TFApprovalError as exc:
                errors.append(exc)
        approve(brain, request)
        try:
            approve(brain, request)
        except TFApprovalError as exc:
            errors.append(exc)

    deciding(brain, decide)
    assert brain.run("pay", conversation_id="c1").status == "succeeded"
    assert [e.status for e in errors] == [404, 409, 409]
    assert "args_hash differs" in str(errors[1])
    assert "already decided" in str(errors[2])


def test_a_waiting_run_can_be_aborted_and_waiting_does_not_count_against_the_timeout(
) -> None:
    bank = Bank()
    # the first answer is not solved: a second planning is allowed only with time left
    plans = [plan(PAY), plan('return "paid"'), plan(PAY)]
    brain = bank_brain(bank, plans, [verdict(False, "say it"), verdict(True)], timeout=0.5)

    now = [1000.0]

    async def main() -> None:
        task = asyncio.create_task(brain.async_run("pay", conversation_id="c1",
                                                   deps=RunDeps(clock=lambda: now[0])))
        while not brain.pending_approvals():
            await asyncio.sleep(0.01)
        now[0] += 60.0  # far past the run's timeout: waiting does not count
        [request] = brain.pending_approvals()
        await brain.approve(brain.runs[0].run_id, request.call_id)
        result = await task
        assert result.status == "succeeded", result.reason
        assert result.final_result == "paid"
        assert result.duration_s < brain.timeout, result.duration_s

    asyncio.run(main())

    async def aborted() -> None:
        task = asyncio.create_task(brain.async_run("pay", conversation_id="c2"))
        while not brain.pending_approvals():
            await asyncio.sleep(0.01)
        assert brain.abort()
        result = await task
        assert (result.status, result.reason) == ("aborted", "aborted")
        assert brain.pending_approvals() == []

    asyncio.run(aborted())


def test_without_a_gate_a_call_needing_approval_is_denied_and_a_chain_cannot_make_it(
) -> None:
    from dcbrain import Chain, TFChainInterpreter
    from dcbrain.llm.base import ToolCall
    from dcbrain.tfplan import TFApprovalDenied

    bank = Bank()
    send = Tool(bank.send_money, requires_approval=True)
    interpreter = TFChainInterpreter({}, tools=[send], isolation="inprocess")
    with pytest.raises(TFApprovalDenied, match="nobody to ask") as denied:
        interpreter.evaluate('return send_money(recipient="x", amount=1)')
    assert denied.value.line == 1
    model = ScriptedLLM([ToolCall("t1", "send_money", {"recipient": "x", "amount": 1}),
                         "could not pay"])
    chain = Chain(name="payer", llm=model, tools=[send])
    result = chain.run("pay x")
    assert result.content == "could not pay"
    assert "requires a person's approval" in result.tool_returns[0]["error"]
    assert bank.calls == []


def test_a_failing_predicate_is_an_error_at_the_call_and_nothing_runs() -> None:
    from dcbrain import TFChainInterpreter
    from dcbrain.tfplan import TFCallError

    bank = Bank()
    send = Tool(bank.send_money, requires_approval=lambda args: args["currency"] == "EUR")
    interpreter = TFChainInterpreter({}, tools=[send], isolation="inprocess")
    with pytest.raises(TFCallError, match="requires_approval predicate failed: KeyError") \
            as failed:
        interpreter.evaluate('x = 1\nreturn send_money(recipient="x", amount=1)')
    assert failed.value.line == 2
    assert bank.calls == []


def test_a_run_waiting_for_a_decision_is_in_state_waiting_everywhere() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)])

    async def main() -> list[Any]:
        events: list[Any] = []

        async def follow() -> None:
            async for event in brain.astream("pay", conversation_id="c1"):
                events.append(event.to_dict())
                if event.to_dict().get("dest") == "waiting":
                    [run] = brain.runs
                    assert run.state == "waiting"  # the run, its events and the board agree
                    assert [r.state for r in brain.runs()] == ["waiting"]
                    [request] = brain.pending_approvals(run.run_id)
                    await brain.approve(run.run_id, request.call_id)

        await follow()
        return events

    events = asyncio.run(main())
    moves = [(e["source"], e["dest"]) for e in events if e["type"] == "state_changed"]
    assert moves == [("init", "init"), ("init", "planning"), ("planning", "running"),
                     ("running", "waiting"), ("waiting", "running"), ("running", "succeeded")]
    asked = next(i for i, e in enumerate(events) if e["type"] == "approval_requested")
    waiting = next(i for i, e in enumerate(events) if e.get("dest") == "waiting")
    assert asked < waiting  # what it waits for is known when it says it waits
    assert events[-1]["status"] == "succeeded"


def test_an_aborted_waiting_run_leaves_state_waiting_for_aborted() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)])

    async def main() -> Any:
        task = asyncio.create_task(brain.async_run("pay", conversation_id="c1"))
        while not brain.runs or brain.runs[0].state != "waiting":
            await asyncio.sleep(0.01)
        assert brain.abort()
        return await task

    result = asyncio.run(main())
    moves = [(e["source"], e["dest"]) for e in of_type(result, "state_changed")]
    assert moves[-2:] == [("running", "waiting"), ("waiting", "aborted")]
    assert bank.count("send_money") == 0


# -- approvals nobody can miss ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_on_approval_handler_decides_as_requests_open(kind: str) -> None:
    bank = Bank()
    seen: list[Any] = []

    def sync_handler(request: Any) -> bool:
        seen.append(request)
        return True

    async def async_handler(request: Any) -> bool:
        seen.append(request)
        return True

    handler = sync_handler if kind == "sync" else async_handler
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], on_approval=handler)
    result = brain.run("pay alice", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "sent 100 to alice")
    [request] = seen
    assert (request.tool, request.arguments, request.run_id) == (
        "send_money", {"recipient": "alice", "amount": 100}, result.run_id)
    [decided] = of_type(result, "approval_decided")
    assert (decided["approved"], decided["decided_by"]) == (True, "on_approval")
    moves = [e["dest"] for e in of_type(result, "state_changed")]
    assert "waiting" not in moves  # decided at once: the run never waited


def test_a_handler_denies_with_a_reason_and_the_planner_hears_it() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY), "I may not pay alice."], [verdict(True)],
                       on_approval=lambda request: (False, "alice is not a payee"))
    result = brain.run("pay alice", conversation_id="c1")
    assert bank.count("send_money") == 0
    [decided] = of_type(result, "approval_decided")
    assert (decided["approved"], decided["reason"]) == (False, "alice is not a payee")
    assert result.final_result == "I may not pay alice."


def test_a_handler_returning_none_leaves_the_request_to_a_person() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], on_approval=lambda request: None)
    requests = deciding(brain, approve)
    result = brain.run("pay alice", conversation_id="c1")
    assert result.status == "succeeded" and len(requests) == 1
    [decided] = of_type(result, "approval_decided")
    assert decided["decided_by"] == "user"


def test_a_failing_handler_is_reported_on_the_run_and_the_request_stays_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bank = Bank()

    def broken(request: Any) -> bool:
        raise RuntimeError("the approval service is down")

    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], on_approval=broken)
    deciding(brain, approve)
    with caplog.at_level(logging.ERROR, logger="dcbrain.brain"):
        result = brain.run("pay alice", conversation_id="c1")
    assert result.status == "succeeded"
    [error] = [e for e in of_type(result, "error") if e["source"] == "on_approval"]
    assert "the approval service is down" in error["error"]
    assert any("the approval service is down" in r.getMessage() for r in caplog.records)


def test_a_handler_answering_nonsense_is_reported_naming_what_it_returned() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], on_approval=lambda r: "yes")
    deciding(brain, approve)
    result = brain.run("pay alice", conversation_id="c1")
    [error] = [e for e in of_type(result, "error") if e["source"] == "on_approval"]
    assert "on_approval returned str 'yes'" in error["error"]
    assert "expected True, False, (approved, reason) or None" in error["error"]


def test_a_run_asked_not_to_wait_returns_waiting_and_resumes_by_run_id(
    tmp_path: Any,
) -> None:
    bank = Bank()
    memory = SQLiteMemory(tmp_path / "m.db")
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)], memory=memory)
    waiting = brain.run("pay alice", conversation_id="c1", wait_for_approvals=False)
    assert (waiting.status, waiting.reason) == ("waiting", "approval")
    [request] = waiting.pending_approvals
    assert isinstance(request, ApprovalRequest) and request.tool == "send_money"
    assert waiting.to_dict()["pending_approvals"][0]["call_id"] == request.call_id
    assert bank.calls == [("balance", "main")]  # stopped before the call
    assert brain.runs == [] and brain.pending_approvals() == [request]
    brain.approve_sync(waiting.run_id, request.call_id, args_hash=request.args_hash)
    result = brain.resume(waiting.run_id)
    assert (result.status, result.final_result) == ("succeeded", "sent 100 to alice")
    assert bank.calls == [("balance", "main"), ("send_money", ("alice", 100))]  # once each
    assert result.iterations == 1  # the planner was not asked again
    seqs = [event["seq"] for event in result.events]
    assert seqs == list(range(len(seqs)))  # both executions, numbered on
    assert [e["type"] for e in result.events].count("run_resumed") == 1
    messages = memory.messages("c1")
    assert [m.role for m in messages] == ["user", "assistant"]  # the question kept once
    memory.close()


def test_a_waiting_run_resumes_through_async_run_with_its_run_id() -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)])

    async def main() -> Any:
        waiting = await brain.async_run("pay alice", "c1", wait_for_approvals=False)
        [request] = waiting.pending_approvals
        await brain.deny(waiting.run_id, request.call_id, reason="not today")
        with pytest.raises(TFBrainError, match="waits for decisions"):
            await brain.async_run("another question", "c1", run_id=waiting.run_id)
        return await brain.async_run("pay alice", "c1", run_id=waiting.run_id)

    result = asyncio.run(main())
    assert bank.count("send_money") == 0
    [decided] = of_type(result, "approval_decided")
    assert (decided["approved"], decided["reason"]) == (False, "not today")


def test_resuming_what_does_not_wait_is_a_clear_error() -> None:
    brain = bank_brain(Bank(), [], [])
    with pytest.raises(TFBrainError, match="no run nope waits to be resumed"):
        brain.resume("nope")


def test_a_subscriber_that_raises_is_reported_on_the_run_and_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bank = Bank()
    brain = bank_brain(bank, [plan(PAY)], [verdict(True)])
    deciding(brain, approve)

    def app_callback(event: Any) -> None:
        if event.type == "approval_requested":
            raise KeyError("arguments")

    brain.subscribe(app_callback)
    with caplog.at_level(logging.ERROR, logger="dcbrain.events"):
        result = brain.run("pay alice", conversation_id="c1")
    assert result.status == "succeeded"
    [error] = [e for e in of_type(result, "error") if e["source"] == "subscriber"]
    assert "app_callback failed on approval_requested event" in error["error"]
    assert "KeyError" in error["error"]
    assert any("app_callback" in r.getMessage() and r.exc_info for r in caplog.records)
