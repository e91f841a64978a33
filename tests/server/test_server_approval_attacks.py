"""Approvals attacked over loopback HTTP: a decision needs the API's auth and a same-origin
JSON request, is bound to its run, call and arguments, is taken once, and a run that
ended refuses it with a 4xx."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

import httpx
import pytest

from dcbrain import ScriptedLLM, SQLiteMemory
from dcbrain.brain import DCBrain
from dcbrain.memory import Memory
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict
from support.server_app import BrainScripts, ServeFn

TOKEN = "s3cret-token"
PAY = 'return pay(invoice="INV-7", amount=120)'


class Ledger:
    def __init__(self) -> None:
        self.paid: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def pay(self, invoice: str, amount: int) -> str:
        """Pay ``amount`` on ``invoice``."""
        with self._lock:
            self.paid.append((invoice, amount))
        return f"paid {amount} on {invoice}"


def paying(ledger: Ledger, *plans: str) -> Any:
    def build(memory: Memory) -> DCBrain:
        return DCBrain(default_llm=ScriptedLLM([plan(p) for p in plans]),
                       default_validate_llm=ScriptedLLM([verdict(True)] * 3), memory=memory,
                       tools=[Tool(ledger.pay, requires_approval=True)],
                       isolation="inprocess")
    return build


def approval_url(run_id: str, request: dict[str, Any]) -> str:
    return f"/v1/runs/{run_id}/approvals/{request['call_id']}"


def test_a_decision_needs_the_token(serve: ServeFn, brains: BrainScripts) -> None:
    ledger = Ledger()
    brains.then(paying(ledger, PAY))
    with serve(token=TOKEN) as api:
        run_id = api.send("c1", "pay")
        [request] = api.wait_for_status(run_id, "waiting")["approvals"]
        body = {"approved": True, "args_hash": request["args_hash"]}
        with httpx.Client(base_url=api.base_url) as anonymous:
            refused = [
                anonymous.post(approval_url(run_id, request), json=body),
                anonymous.post(approval_url(run_id, request) + f"?access_token={TOKEN}",
                               json=body),
                anonymous.post(approval_url(run_id, request), json=body,
                               headers={"Authorization": "Bearer wrong"}),
                anonymous.post(approval_url(run_id, request), json=body,
                               headers={"Authorization": f"Basic {TOKEN}"}),
            ]
        assert [r.status_code for r in refused] == [401] * 4
        assert api.wait_for_status(run_id, "waiting")["approvals"][0]["decision"] is None
        assert api.http.post(approval_url(run_id, request), json=body).status_code == 200
        assert api.wait_for(run_id)["status"] == "succeeded"
    assert ledger.paid == [("INV-7", 120)]


@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_decision_from_another_origin_or_not_json_is_refused(
    serve: ServeFn, brains: BrainScripts, token: str | None
) -> None:
    ledger = Ledger()
    brains.then(paying(ledger, PAY))
    with serve(token=token) as api:
        run_id = api.send("c1", "pay")
        [request] = api.wait_for_status(run_id, "waiting")["approvals"]
        url = approval_url(run_id, request)
        body = {"approved": True, "args_hash": request["args_hash"]}
        cross = [api.http.post(url, json=body, headers={"Origin": origin})
                 for origin in ("http://evil.example", "null", "http://127.0.0.1:1",
                                "http://localhost", "file://", "http://[::1")]
        assert [r.status_code for r in cross] == [403] * 6
        assert all(r.json()["error"] == "cross_origin" for r in cross)
        site = api.http.post(url, json=body, headers={"Sec-Fetch-Site": "cross-site"})
        assert site.status_code == 403
        form = api.http.post(url, data={"approved": "true"})
        plain = api.http.post(url, content=b'{"approved": true}',
                              headers={"Content-Type": "text/plain"})
        assert (form.status_code, plain.status_code) == (415, 415)
        # an abort or a message is refused from another origin too
        assert api.http.post(f"/v1/runs/{run_id}/abort", json={},
                             headers={"Origin": "http://evil.example"}).status_code == 403
        assert api.http.post("/v1/conversations/c2/messages", json={"content": "x"},
                             headers={"Origin": "http://evil.example"}).status_code == 403
        assert api.wait_for_status(run_id, "waiting")["approvals"][0]["decision"] is None
        same = api.http.post(url, json=body, headers={"Origin": api.base_url,
                                                      "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 200, same.text
        assert api.wait_for(run_id)["status"] == "succeeded"
    assert ledger.paid == [("INV-7", 120)]


def test_one_approval_is_one_call_not_every_call_with_the_same_arguments(
    serve: ServeFn, brains: BrainScripts
) -> None:
    ledger = Ledger()
    twice = 'pay(invoice="INV-7", amount=120)\nreturn pay(invoice="INV-7", amount=120)'
    brains.then(paying(ledger, twice))
    with serve() as api:
        run_id = api.send("c1", "pay")
        [first] = api.wait_for_status(run_id, "waiting")["approvals"]
        assert api.http.post(approval_url(run_id, first), json={
            "approved": True, "args_hash": first["args_hash"]}).status_code == 200
        # the second call with the same arguments is another call: it is asked for again
        run = api.wait_for_status(run_id, "waiting")
        while len(run["approvals"]) < 2:
            run = api.wait_for_status(run_id, "waiting")
        second = run["approvals"][1]
        assert second["call_id"] != first["call_id"]
        assert second["args_hash"] == first["args_hash"] and second["decision"] is None
        assert ledger.paid == [("INV-7", 120)]
        assert api.http.post(approval_url(run_id, first), json={
            "approved": True}).status_code == 409  # the first decision is not taken twice
        assert api.http.post(approval_url(run_id, second), json={
            "approved": False, "reason": "once is enough"}).status_code == 200
        api.wait_for(run_id)
    assert ledger.paid == [("INV-7", 120)]


def test_a_decision_does_not_carry_over_to_a_replan_with_other_arguments(
    serve: ServeFn, brains: BrainScripts
) -> None:
    ledger = Ledger()
    brains.then(paying(ledger, PAY, 'return pay(invoice="INV-7", amount=999)'))
    with serve() as api:
        run_id = api.send("c1", "pay")
        [first] = api.wait_for_status(run_id, "waiting")["approvals"]
        assert api.http.post(approval_url(run_id, first), json={
            "approved": False, "reason": "too early"}).status_code == 200
        run = api.wait_for_status(run_id, "waiting")
        while len(run["approvals"]) < 2:
            run = api.wait_for_status(run_id, "waiting")
        replanned = run["approvals"][1]
        assert replanned["arguments"] == {"invoice": "INV-7", "amount": 999}
        assert replanned["call_id"] != first["call_id"]
        # the first call's decision, replayed: to its own call, and with its args_hash
        replay = api.http.post(approval_url(run_id, first), json={"approved": True})
        stale = api.http.post(approval_url(run_id, replanned), json={
            "approved": True, "args_hash": first["args_hash"]})
        assert (replay.status_code, stale.status_code) == (409, 409)
        assert "args_hash differs" in stale.json()["detail"]
        assert ledger.paid == []
        assert api.http.post(approval_url(run_id, replanned), json={
            "approved": False, "reason": "no"}).status_code == 200
        api.wait_for(run_id)
    assert ledger.paid == []


def test_racing_decisions_have_exactly_one_winner(serve: ServeFn, brains: BrainScripts) -> None:
    ledger = Ledger()
    brains.then(paying(ledger, PAY, 'return "denied, stopped"'))
    with serve() as api:
        run_id = api.send("c1", "pay")
        [request] = api.wait_for_status(run_id, "waiting")["approvals"]
        answers = api.race_decisions(run_id, request["call_id"], 12)
        done = api.wait_for(run_id)
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] + [409] * 11
    [winner] = [r.json() for r in answers if r.status_code == 200]
    assert done["approvals"][0]["decision"]["approved"] is winner["approved"]
    assert ledger.paid == ([("INV-7", 120)] if winner["approved"] else [])


def test_a_cancelled_and_then_pruned_run_refuses_decisions(
    serve: ServeFn, brains: BrainScripts, memory: SQLiteMemory
) -> None:
    ledger = Ledger()
    brains.then(paying(ledger, PAY))
    with serve() as api:
        run_id = api.send("c1", "pay")
        [request] = api.wait_for_status(run_id, "waiting")["approvals"]
        assert api.http.post(f"/v1/runs/{run_id}/cancel", json={}).status_code == 202
        ended = api.wait_for(run_id)
        assert ended["status"] == "aborted"
        late = api.http.post(approval_url(run_id, request), json={"approved": True})
        assert late.status_code == 409, late.text
        with sqlite3.connect(memory.path) as conn:  # it ended two days ago
            conn.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?",
                         (time.time() - 2 * 86400, run_id))
        assert api.http.post("/v1/runs/prune", json={"older_than": "1d"}).json()["pruned"] == 1
        gone = api.http.post(approval_url(run_id, request), json={"approved": True})
        assert gone.status_code == 404 and gone.json()["error"] == "not_found"
        assert api.http.get("/v1/health").status_code == 200
    assert ledger.paid == []


@pytest.mark.parametrize(("headers", "refused"), [
    ({"host": "[::1]:8765", "origin": "http://[::1]:8765"}, False),
    ({"host": "localhost", "origin": "http://localhost:80"}, False),
    # TLS ended at a proxy that kept the Host: the page's origin is the server's
    ({"host": "dcbrain.example", "origin": "https://dcbrain.example"}, False),
    ({"host": "dcbrain.example", "origin": "https://evil.dcbrain.example"}, True),
    ({"host": "127.0.0.1:9", "x-forwarded-host": "dcbrain.example",
      "origin": "https://dcbrain.example"}, False),  # a proxy kept the page's host
    ({"host": "127.0.0.1:9", "origin": "http://127.0.0.1:9", "sec-fetch-site": "same-site"},
     True),
    ({"host": "127.0.0.1:9", "sec-fetch-site": "none"}, False),  # typed by the user
    ({"host": "127.0.0.1:9", "origin": "http://127.0.0.1:99999"}, True),
    ({"host": "127.0.0.1:9"}, False),  # not from a page: curl, a script
])
def test_the_origin_rule(headers: dict[str, str], refused: bool) -> None:
    from dcbrain.server.app import cross_origin_problem

    assert (cross_origin_problem(headers) is not None) is refused
