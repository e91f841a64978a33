"""Pending approval requests are bounded: per run (the gate of its plans) and per process
(the board every run of a brain or server waits at)."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from dcbrain import BrainResult, DCBrain, ScriptedLLM
from dcbrain.approvals import MAX_PENDING_PER_RUN, ApprovalBoard
from dcbrain.chain.approval_gate import ApprovalGate
from dcbrain.exceptions import ApprovalRequired
from dcbrain.journal import JournalKey, canonical_args
from dcbrain.tfplan.errors import TFApprovalDenied
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict


def key(invoice: str) -> JournalKey:
    return JournalKey(1, "", "pay", canonical_args({"invoice": invoice}), 0)


def test_a_plan_reaching_more_calls_than_a_run_may_wait_for_gets_a_clear_denial() -> None:
    gate = ApprovalGate()
    for i in range(MAX_PENDING_PER_RUN):
        try:
            gate.check("pay", "tool", {"invoice": str(i)}, key(str(i)), why="w")
        except ApprovalRequired:
            pass
        else:
            raise AssertionError("the call ran without a decision")
    over = gate.check("pay", "tool", {"invoice": "last"}, key("last"), why="w")
    assert isinstance(over, TFApprovalDenied)
    assert f"at most {MAX_PENDING_PER_RUN} decisions at a time" in str(over)
    assert len(gate.take_pending()) == MAX_PENDING_PER_RUN


def test_the_same_call_asked_again_is_not_counted_twice() -> None:
    gate = ApprovalGate()
    for _ in range(MAX_PENDING_PER_RUN + 5):
        with contextlib.suppress(ApprovalRequired):
            gate.check("pay", "tool", {"invoice": "1"}, key("1"), why="w")
    assert len(gate.take_pending()) == 1


class Ledger:
    def __init__(self) -> None:
        self.paid: list[str] = []
        self._lock = threading.Lock()

    def pay(self, invoice: str) -> str:
        """Pay ``invoice``."""
        with self._lock:
            self.paid.append(invoice)
        return f"paid {invoice}"


def test_a_run_past_the_process_wide_cap_fails_clearly_and_the_waiting_one_goes_on() -> None:
    ledger = Ledger()
    board = ApprovalBoard(max_pending=1)
    brain = DCBrain(default_llm=ScriptedLLM([plan('return pay(invoice="A")'),
                                             plan('return pay(invoice="B")')]),
                    default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(ledger.pay, requires_approval=True)], isolation="inprocess",
                    approvals=board)

    async def scenario() -> tuple[BrainResult, BrainResult]:
        first = asyncio.create_task(brain.async_run("pay A", conversation_id="a", run_id="run-a"))
        while not board.pending("run-a"):
            await asyncio.sleep(0.01)
        second = await brain.async_run("pay B", conversation_id="b", run_id="run-b")
        [(_, request)] = board.pending()
        await brain.approve("run-a", request.call_id, args_hash=request.args_hash)
        return await first, second

    first, second = asyncio.run(scenario())
    assert second.status == "failed"
    assert "at most 1 at a time" in str(second.error)
    assert first.status == "succeeded"
    assert ledger.paid == ["A"]
    assert board.pending() == []


def test_an_abort_before_the_wait_begins_leaves_no_request_behind() -> None:
    ledger = Ledger()
    board = ApprovalBoard(max_pending=1)
    brain = DCBrain(default_llm=ScriptedLLM([plan('return pay(invoice="A")')] * 2),
                    default_validate_llm=ScriptedLLM([verdict(True)]),
                    tools=[Tool(ledger.pay, requires_approval=True)], isolation="inprocess",
                    approvals=board)
    board.on_request.append(lambda run_id, request: brain.abort())  # as it is asked
    first = brain.run("pay A", conversation_id="a")
    assert (first.status, first.reason) == ("aborted", "aborted")
    assert board.pending() == []
    board.on_request.clear()
    second = asyncio.run(_pay_once(brain, board))
    assert second.status == "succeeded"  # the cap has room: nothing was left counted
    assert ledger.paid == ["A"]


async def _pay_once(brain: DCBrain, board: ApprovalBoard) -> BrainResult:
    task = asyncio.create_task(brain.async_run("pay A", conversation_id="b"))
    while not board.pending():
        await asyncio.sleep(0.01)
    [(run_id, request)] = board.pending()
    await brain.approve(run_id, request.call_id, args_hash=request.args_hash)
    return await task
