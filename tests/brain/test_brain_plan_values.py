"""Money and dates through a brain run: the planner is told their formats, the plan gets
them as values, the edge writes them as text, and a resumed run reads the same types."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.brain import RunDeps
from dcbrain.journal import CallJournal, JournalEntry
from support.brain_scripts import plan, verdict


class Order(BaseModel):
    order_id: str
    total: Decimal
    placed: datetime
    due: date


class Shop:
    def __init__(self) -> None:
        self.refunds: list[tuple[Any, Any]] = []

    def tools(self) -> list[Any]:
        def lookup_order(order_id: str) -> Order:
            """Look an order up."""
            return Order(order_id=order_id, total=Decimal("129.99"),
                         placed=datetime(2026, 3, 1, 9, 30), due=date(2026, 3, 31))

        def refund(order_id: str, amount: Decimal, on: date) -> dict[str, Any]:
            """Refund part of an order."""
            self.refunds.append((amount, on))
            return {"refund_id": f"R-{order_id}", "amount": amount}

        return [lookup_order, refund]


HALF_REFUND = """\
o = lookup_order(order_id="A1")
r = refund(order_id="A1", amount=o["total"] / 2, on=o["due"])
return {"refund": r["refund_id"], "amount": r["amount"], "twice": o["total"] * 2,
        "days": (o["due"] - o["placed"].date()).days, "label": f"{o['total']:.2f}"}"""


def brain_for(shop: Shop, replies: list[Any], verdicts: list[Any]) -> tuple[DCBrain, ScriptedLLM]:
    planner = ScriptedLLM(replies)
    return DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM(verdicts),
                   tools=shop.tools()), planner


def test_the_planner_is_told_the_formats_and_the_plan_computes_with_money() -> None:
    shop = Shop()
    brain, planner = brain_for(shop, [plan(HALF_REFUND)], [verdict(True)])
    result = brain.run("Refund half of order A1", conversation_id="c1")
    assert result.status == "succeeded", result.reason
    prompt = "\n".join(str(message["content"]) for message in planner.calls[0])
    assert "lookup_order(order_id: str) -> Order\n" in prompt
    assert "Order:\n  order_id: str\n  total: Decimal\n  placed: datetime\n  due: date" in prompt
    assert "refund(order_id: str, amount: Decimal, on: date) -> dict\n" in prompt
    assert shop.refunds == [(Decimal("64.995"), date(2026, 3, 31))]
    assert [type(part) for part in shop.refunds[0]] == [Decimal, date]
    final = result.final_result
    assert final["twice"] == Decimal("259.98") and final["days"] == 30
    assert final["label"] == "129.99"
    # at the edge (events, JSON) money is today's text
    [finished] = [e for e in result.events if e["type"] == "call_finished"
                  and e["name"] == "lookup_order"]
    assert finished["result"]["total"] == "129.99"
    assert finished["result"]["placed"] == "2026-03-01T09:30:00"


def test_a_resumed_run_reads_back_decimals_and_dates_from_the_stored_journal() -> None:
    shop = Shop()
    journal = CallJournal()
    brain, _ = brain_for(shop, [plan(HALF_REFUND)], [verdict(True)])
    asyncio.run(brain.async_run("Refund half of order A1", conversation_id="c1",
                                run_id="run-9", deps=RunDeps(journal=journal)))
    stored = [JournalEntry.from_dict(json.loads(json.dumps(entry.to_dict())))
              for entry in journal.entries()]  # as a durable store keeps them
    [looked_up] = [entry for entry in stored if entry.key.name == "lookup_order"]
    assert looked_up.result["total"] == Decimal("129.99")
    assert type(looked_up.result["placed"]) is datetime
    replay_shop = Shop()
    silent, _ = brain_for(replay_shop, [], [])  # nothing may be asked again
    result = asyncio.run(silent.async_run("Refund half of order A1", conversation_id="c2",
                                          run_id="run-9",
                                          deps=RunDeps(journal=CallJournal(stored))))
    assert result.status == "succeeded", result.reason
    assert replay_shop.refunds == []  # the refund was recorded: not repeated
    assert result.final_result["twice"] == Decimal("259.98")
    assert result.final_result["amount"] == Decimal("64.995")


def test_a_stored_dict_that_looks_like_a_tag_reads_back_as_a_dict() -> None:
    from dcbrain.journal import from_journal_value, journal_value

    value = {"a": {"$decimal": "1.5"}, "b": [Decimal("2.50"), ("x", date(2026, 1, 1))]}
    assert from_journal_value(json.loads(json.dumps(journal_value(value)))) == {
        "a": {"$decimal": "1.5"}, "b": [Decimal("2.50"), ["x", date(2026, 1, 1)]]}
