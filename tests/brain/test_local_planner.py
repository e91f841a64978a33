"""The embedded model's planner: what it is asked, and the grammar its replies follow.

The planning contexts are the ones a real DCBrain hands its planner, and the model is
replaced only at llama.cpp's boundary (:class:`ScriptedLocalLLM` answers the completion
request the real planner builds), so what the tiny model would be told is checked
exactly. Decoding itself needs the model: one test runs it when it is installed.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dcbrain import DCBrain, ScriptedLLM
from dcbrain.brain import DEFAULT_PLANNING_TEMPLATE, PlanningContext
from dcbrain.brain.local_planner import (
    MAX_SAMPLES,
    REVISION_TEMPERATURE,
    LocalPlanner,
    last_attempt,
    plan_grammar,
    planning_request,
)
from dcbrain.brain.planner import PlanReply
from dcbrain.llm.local import LocalLLM, local_model_available
from dcbrain.tfplan import extract_plan


def get_product(name: str) -> dict[str, Any]:
    """Price (EUR) and stock of a product."""
    return {"name": name, "price": 24.5, "stock": 12}


TOOLS = {"get_product": get_product}
FAILED_PLAN = 'result = get_product(stock=3)\nreturn result'
GOOD_PLAN = 'result = get_product(name="lamp")\nreturn result'


def block(plan: str) -> str:
    return f"```tf_plan\n{plan}\n```"


class ScriptedLocalLLM(LocalLLM):
    """The embedded model with llama.cpp replaced: each completion request is recorded
    and answered with the next scripted reply (shared by every copy of the instance)."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(Path("never-loaded.gguf"), threads=1)
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        content = self.replies.pop(0)
        return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    def _complete_streaming(self, request: dict[str, Any], take: Callable[[Any], bool]) -> None:
        """The streamed form of the same answer: its text in two chunks, then the usage."""
        answer = self._complete(request)
        content = answer["choices"][0]["message"]["content"]
        half = len(content) // 2
        for part in (content[:half], content[half:]):
            take({"choices": [{"index": 0, "delta": {"content": part}, "finish_reason": None}]})
        take({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        take({"choices": [], "usage": answer["usage"]})


class RecordingPlanner:
    """A planner that keeps a copy of every context it is given."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.contexts: list[PlanningContext] = []

    async def plan(self, ctx: PlanningContext) -> PlanReply:
        self.contexts.append(copy.deepcopy(ctx))
        return PlanReply(self.replies.pop(0))


def recorded_contexts() -> list[PlanningContext]:
    """What a DCBrain hands its planner: a plan that fails the check, then a retry."""
    planner = RecordingPlanner([block(FAILED_PLAN), block(GOOD_PLAN)])
    brain = DCBrain(planner=planner,
                    default_validate_llm=ScriptedLLM([{"is_solved": True, "suggestion": ""}]),
                    tools=[get_product], max_iterations=2)
    result = brain.run("What does the lamp cost?", "c1")
    assert result.status == "succeeded", result.last_error
    return planner.contexts


def test_a_first_planning_asks_only_the_question() -> None:
    first, _ = recorded_contexts()
    assert last_attempt(first) is None
    assert planning_request(first) == "What does the lamp cost?"


def test_a_revision_shows_the_failed_plan_and_its_error() -> None:
    _, second = recorded_contexts()
    plan, feedback = last_attempt(second) or ("", "")
    assert plan == FAILED_PLAN
    assert "missing required argument 'name'" in feedback
    assert "has no argument 'stock'" in feedback
    turn = planning_request(second)
    assert turn.startswith("What does the lamp cost?\nThis plan did not answer it:")
    assert block(FAILED_PLAN) in turn
    assert turn.endswith("Write a different plan.")


def test_the_planner_samples_revisions_and_decodes_first_plans_greedily() -> None:
    first, second = recorded_contexts()
    model = ScriptedLocalLLM([block(GOOD_PLAN), block(GOOD_PLAN)])
    planner = LocalPlanner(model, TOOLS)
    for ctx in (first, second):
        assert planner_reply(planner, ctx).content == block(GOOD_PLAN)
    first_request, second_request = model.requests
    system, *examples, question = first_request["messages"]
    assert system["role"] == "system" and "get_product(name: text)" in system["content"]
    assert examples == planner.samplers[0].examples
    assert question == {"role": "user", "content": "What does the lamp cost?"}
    assert first_request["grammar"] == plan_grammar(TOOLS)
    assert first_request["temperature"] == 0.0
    assert second_request["temperature"] == REVISION_TEMPERATURE
    # No example reply is a failed plan or a direct answer: a tiny model copies replies.
    replies = [m["content"] for m in examples if m["role"] == "assistant"]
    assert all(reply.startswith("```tf_plan\n") for reply in replies)
    assert not any(reply.startswith("```tf_plan\nreturn get_product_result") for reply in replies)


REWORDED_TEMPLATE = (
    DEFAULT_PLANNING_TEMPLATE
    .replace("## Chains", "# Available chains").replace("## Tools", "# Available tools")
    .replace("## Earlier attempts that did not solve the question", "Previous tries:")
    .replace("### Attempt {{ loop.index }}\n```tf_plan\n{{ attempt.plan }}\n```",
             "Try {{ loop.index }}: {{ attempt.plan }}")
    .replace("It failed with this error:", "Error:")
    .replace("## Calls that already succeeded in this run", "Done already:")
)


RUNTIME_FAILURE = 'product = get_product(name="lamp")\nreturn product["cost"]'


def embedded_requests(planning_prompt: str | None) -> list[dict[str, Any]]:
    """What the embedded model is asked in a run whose first plan fails when it runs."""
    model = ScriptedLocalLLM([block(RUNTIME_FAILURE), block(GOOD_PLAN)])
    brain = DCBrain(planner=LocalPlanner(model, TOOLS), planning_prompt=planning_prompt,
                    default_validate_llm=ScriptedLLM([{"is_solved": True, "suggestion": ""}]),
                    tools=[get_product], max_iterations=2, isolation="inprocess")
    result = brain.run("What does the lamp cost?", "c1")
    assert result.status == "succeeded", result.last_error
    return model.requests


def test_rewording_the_planning_template_does_not_change_what_the_embedded_model_is_asked(
) -> None:
    assert REWORDED_TEMPLATE.count("##") < DEFAULT_PLANNING_TEMPLATE.count("##")
    default, reworded = embedded_requests(None), embedded_requests(REWORDED_TEMPLATE)
    assert reworded == default
    revision = default[1]["messages"][-1]["content"]
    assert block(RUNTIME_FAILURE) in revision and "KeyError" in revision
    assert revision.endswith('Already done, free to repeat: get_product(name="lamp") -> '
                             '{"name": "lamp", "price": 24.5, "stock": 12}\n'
                             "Write a different plan.")


def convert(amount: float, currency: str, rounding: int = 2) -> float:
    """Convert an amount in EUR to another currency."""
    return amount


def test_the_grammar_admits_long_names_subscripts_and_a_direct_answer() -> None:
    grammar = plan_grammar({"get_product": get_product, "convert": convert})
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())
    assert rules["root"] == "plan | answer"
    assert rules["ident"] == "[a-zA-Z_] [a-zA-Z0-9_]{0,39}"
    assert "index?" in rules["term"] and rules["call"] == "call0 | call1"
    # A call names the tool's own arguments: required ones in order, then optional ones.
    assert rules["call0"] == '"get_product(" "name=" expr ")"'
    assert rules["call1"] == (
        '"convert(" "amount=" expr ", currency=" expr (", rounding=" expr)? ")"')
    assert rules["answer"].startswith("[A-Z]")  # never a backtick: a plan is a plan
    # Assigned names cannot start with "ret" (the tiny model writes "return = x" otherwise).
    target = re.compile(rules["target"].replace(" | ", "|").replace('"', "").replace(" ", ""))
    assert rules["stmt"].startswith("(target ")
    assert [bool(target.fullmatch(name)) for name in ("result", "r", "re", "price_eur")] == \
        [True] * 4
    assert not target.fullmatch("return") and not target.fullmatch("retval")


def planner_reply(planner: LocalPlanner, ctx: PlanningContext) -> PlanReply:
    import asyncio

    return asyncio.run(planner.plan(ctx))


@pytest.mark.slow
@pytest.mark.skipif(not local_model_available(), reason="embedded model not installed")
def test_the_embedded_model_revises_a_failed_plan_into_a_different_one() -> None:
    _, second = recorded_contexts()
    reply = planner_reply(LocalPlanner(LocalLLM(threads=1), TOOLS), second).content
    plan = extract_plan(reply)
    assert plan is None or plan != FAILED_PLAN
    if plan is not None:
        assert re.search(r"return ", plan)


def test_a_plan_that_fails_the_check_or_repeats_the_failed_one_is_sampled_again() -> None:
    first, second = recorded_contexts()

    def samples(ctx: PlanningContext, *replies: str) -> tuple[PlanReply, list[tuple[Any, int]]]:
        model = ScriptedLocalLLM(list(replies))
        reply = planner_reply(LocalPlanner(model, TOOLS), ctx)
        return reply, [(request["temperature"], request["seed"]) for request in model.requests]

    reply, drawn = samples(first, block("return price"), block(GOOD_PLAN))
    assert reply.content == block(GOOD_PLAN) and reply.usage.total_tokens == 30
    assert drawn == [(0.0, 7), (REVISION_TEMPERATURE, 8)]

    reply, drawn = samples(second, block(FAILED_PLAN), block(FAILED_PLAN), block(GOOD_PLAN))
    assert reply.content == block(GOOD_PLAN)
    assert [seed for _, seed in drawn] == [7, 8, 9] and len(drawn) == MAX_SAMPLES

    reply, drawn = samples(first, "The lamp costs 24.5 EUR.")  # a direct answer as it is
    assert reply.content == "The lamp costs 24.5 EUR." and len(drawn) == 1


def test_a_revision_request_lists_the_calls_already_made() -> None:
    ctx = PlanningContext(
        question="Refund A1", max_iterations=3, max_tokens=1000,
        contextual_plan_info=[{"plan": 'x = refund(order_id="A1", amount=3)\nreturn x["nope"]',
                               "result": "", "error": "KeyError: 'nope'", "suggestion": ""}],
        succeeded_calls=['refund(amount=3, order_id="A1") -> {"refund_id": "R1"}'],
    )
    attempt = last_attempt(ctx)
    assert attempt is not None
    plan, feedback = attempt
    assert plan.startswith("x = refund(")
    assert feedback.startswith("It failed with this error: KeyError")
    assert feedback.endswith('Already done, free to repeat: refund(amount=3, order_id="A1") -> '
                             '{"refund_id": "R1"}')
