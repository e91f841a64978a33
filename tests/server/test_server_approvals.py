"""Human approval on an in-process server: the run waits (status ``waiting``) with its
request in ``GET /v1/runs/{id}``; ``POST /v1/runs/{id}/approvals/{call_id}`` decides."""

from __future__ import annotations

from typing import Any

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.memory import Memory
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.server_app import BrainScripts, ServeFn

PAY = 'n = count_invoices()\nreturn pay(invoice="INV-7", amount=n * 40)'


class Ledger:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def count_invoices(self) -> int:
        """How many invoices are open."""
        self.calls.append("count_invoices")
        return 3

    def pay(self, invoice: str, amount: int) -> str:
        """Pay ``amount`` on ``invoice``."""
        self.calls.append("pay")
        return f"paid {amount} on {invoice}"


def paying_brain(ledger: Ledger, plans: list[str]) -> Any:
    def build(memory: Memory) -> DCBrain:
        return DCBrain(default_llm=ScriptedLLM([plan(p) for p in plans]),
                       default_validate_llm=ScriptedLLM([verdict(True)]), memory=memory,
                       tools=[Tool(ledger.count_invoices),
                              Tool(ledger.pay, requires_approval=True)],
                       isolation="inprocess")
    return build


def test_a_run_waits_for_the_decision_posted_over_http(serve: ServeFn,
                                                       brains: BrainScripts) -> None:
    ledger = Ledger()
    brains.then(paying_brain(ledger, [PAY]))
    with serve() as api:
        run_id = api.send("c1", "pay the open invoices")
        run = api.wait_for_status(run_id, "waiting")
        # the listing reads the run store, which the run's writer updates a moment later
        listed = api.wait_for_listing("waiting", [run_id])
        assert listed[0]["approvals"][0]["tool"] == "pay"
        [request] = run["approvals"]
        assert (request["tool"], request["arguments"], request["line"]) == (
            "pay", {"invoice": "INV-7", "amount": 120}, 2)
        assert request["plan"] == PAY and request["decision"] is None
        url = f"/v1/runs/{run_id}/approvals/{request['call_id']}"
        assert api.http.post(url, content=b'{"approved": true}').status_code == 415
        assert api.http.post(url, json={"approved": 1}).status_code == 400
        assert api.http.post(f"/v1/runs/{run_id}/approvals/ap-{'0' * 20}",
                             json={"approved": True}).status_code == 404
        decided = api.http.post(url, json={"approved": True,
                                           "args_hash": request["args_hash"]})
        assert decided.status_code == 200, decided.text
        assert decided.json()["approved"] is True
        done = api.wait_for(run_id)
        assert api.http.post(url, json={"approved": True}).status_code == 409  # decided
    assert done["status"] == "succeeded"
    assert done["result"]["final_result"] == "paid 120 on INV-7"
    assert done["approvals"][0]["decision"]["approved"] is True
    assert ledger.calls == ["count_invoices", "pay"]


def test_a_denial_over_http_makes_the_brain_plan_again(serve: ServeFn,
                                                       brains: BrainScripts) -> None:
    ledger = Ledger()
    brains.then(paying_brain(ledger, [PAY, 'return "asked finance instead"']))
    with serve() as api:
        run_id = api.send("c1", "pay the open invoices")
        [request] = api.wait_for_status(run_id, "waiting")["approvals"]
        response = api.http.post(f"/v1/runs/{run_id}/approvals/{request['call_id']}",
                                 json={"approved": False, "reason": "needs a second pair"})
        assert response.status_code == 200
        done = api.wait_for(run_id)
    assert done["result"]["final_result"] == "asked finance instead"
    assert ledger.calls == ["count_invoices"]
