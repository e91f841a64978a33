"""The embedded model's planner: what it is asked, and the grammar its replies follow.

The requests are built from what a real DCBrain sends its planner (recorded through a
FunctionLLM), so a change of the planning template that hides the failed attempt from
the small model fails here. Decoding itself needs the model: one test runs it when it
is installed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from dcbrain import DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.llm.local import LocalLLM, local_model_available
from dcbrain.llm.local_planner import (
    REVISION_TEMPERATURE,
    LocalPlanner,
    last_attempt,
    plan_grammar,
    planning_turns,
)
from dcbrain.tfplan import extract_plan


def get_product(name: str) -> dict[str, Any]:
    """Price (EUR) and stock of a product."""
    return {"name": name, "price": 24.5, "stock": 12}


FAILED_PLAN = 'result = get_product(stock=3)\nreturn result'


def recorded_planning_requests() -> list[list[dict[str, Any]]]:
    """The messages a DCBrain sends its planner: a plan that fails the check, then a retry."""
    requests: list[list[dict[str, Any]]] = []
    replies = iter([f"```tf_plan\n{FAILED_PLAN}\n```",
                    '```tf_plan\nresult = get_product(name="lamp")\nreturn result\n```'])

    def planner(messages: list[dict[str, Any]]) -> str:
        requests.append(messages)
        return next(replies)

    brain = DCBrain(default_llm=FunctionLLM(planner),
                    default_validate_llm=ScriptedLLM([{"is_solved": True, "suggestion": ""}]),
                    tools=[get_product], max_iterations=2)
    result = brain.run("What does the lamp cost?", "c1")
    assert result.status == "succeeded", result.last_error
    return requests


def test_a_first_planning_asks_only_the_question() -> None:
    first, _ = recorded_planning_requests()
    assert last_attempt(first) is None
    assert planning_turns(first) == [{"role": "user", "content": "What does the lamp cost?"}]


def test_a_revision_shows_the_failed_plan_and_its_error() -> None:
    _, second = recorded_planning_requests()
    plan, feedback = last_attempt(second) or ("", "")
    assert plan == FAILED_PLAN
    assert "missing required argument 'name'" in feedback
    assert "has no argument 'stock'" in feedback
    (turn,) = planning_turns(second)
    assert turn["content"].startswith("What does the lamp cost?\nThis plan did not answer it:")
    assert f"```tf_plan\n{FAILED_PLAN}\n```" in turn["content"]
    assert turn["content"].endswith("Write a different plan.")


def test_the_planner_samples_revisions_and_decodes_first_plans_greedily() -> None:
    first, second = recorded_planning_requests()
    planner = LocalLLM().planner({"get_product": get_product})
    assert isinstance(planner, LocalPlanner)
    first_request, second_request = planner._messages(first), planner._messages(second)
    assert first_request[0]["role"] == "system" and "get_product(name: text)" in \
        first_request[0]["content"]
    assert first_request[1:-1] == planner.examples
    assert planner._temperature(first_request) == 0.0
    assert planner._temperature(second_request) == REVISION_TEMPERATURE
    # No example reply is a failed plan or a direct answer: a tiny model copies replies.
    replies = [m["content"] for m in planner.examples if m["role"] == "assistant"]
    assert all(reply.startswith("```tf_plan\n") for reply in replies)
    assert not any(reply.startswith("```tf_plan\nreturn get_product_result") for reply in replies)


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


@pytest.mark.slow
@pytest.mark.skipif(not local_model_available(), reason="embedded model not installed")
def test_the_embedded_model_revises_a_failed_plan_into_a_different_one() -> None:
    _, second = recorded_planning_requests()
    planner = LocalLLM(threads=1).planner({"get_product": get_product})
    reply = planner.chat(second).content
    plan = extract_plan(reply)
    assert plan is None or plan != FAILED_PLAN
    if plan is not None:
        assert re.search(r"return ", plan)


def test_a_plan_that_fails_the_check_or_repeats_the_failed_one_is_sampled_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the decoding is replaced (by scripted samples); the rest is the real planner."""
    from dcbrain.llm.base import LLMReply
    from dcbrain.usage import Usage

    first, second = recorded_planning_requests()
    planner = LocalLLM().planner({"get_product": get_product})
    samples: list[tuple[float | None, int]] = []

    def scripted(*replies: str) -> None:
        queue = iter(replies)

        async def complete_once(messages: list[dict[str, Any]], **options: Any) -> LLMReply:
            samples.append((options["temperature"], options["seed"]))
            return LLMReply(content=next(queue), usage=Usage.of_call("local", 10, 5))

        monkeypatch.setattr(planner, "_complete_once", complete_once)

    good = '```tf_plan\nresult = get_product(name="lamp")\nreturn result\n```'
    scripted("```tf_plan\nreturn price\n```", good)
    reply = planner.chat(first)
    assert reply.content == good and reply.usage.total_tokens == 30
    assert samples == [(None, 7), (REVISION_TEMPERATURE, 8)]

    samples.clear()
    scripted(f"```tf_plan\n{FAILED_PLAN}\n```", f"```tf_plan\n{FAILED_PLAN}\n```", good)
    assert planner.chat(second).content == good
    assert [seed for _, seed in samples] == [7, 8, 9]

    samples.clear()
    scripted("The lamp costs 24.5 EUR.")  # a direct answer is taken as it is
    assert planner.chat(first).content == "The lamp costs 24.5 EUR."
    assert len(samples) == 1


def test_a_revision_request_lists_the_calls_already_made() -> None:
    from dcbrain.llm.local_planner import last_attempt

    system = ("## Earlier attempts that did not solve the question\n### Attempt 1\n"
              "```tf_plan\nx = refund(order_id=\"A1\", amount=3)\nreturn x[\"nope\"]\n```\n"
              "It failed with this error:\nKeyError: 'nope'\n"
              "Write a new plan that fixes these problems; do not repeat a failed plan.\n\n"
              "## Calls that already succeeded in this run\nCalling one of these again ...\n"
              '- refund(amount=3, order_id="A1") -> {"refund_id": "R1"}\n\n## Budget\n')
    attempt = last_attempt([{"role": "system", "content": system},
                            {"role": "user", "content": "Refund A1"}])
    assert attempt is not None
    plan, feedback = attempt
    assert plan.startswith("x = refund(")
    assert "KeyError" in feedback
    assert feedback.endswith('Already done, free to repeat: refund(amount=3, order_id="A1") -> '
                             '{"refund_id": "R1"}')
