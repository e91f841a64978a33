"""TokenBudget inside a run: counting what providers do not report, releasing failed calls."""

from __future__ import annotations

import support.llms as support_llms
from dcbrain import Chain, LLMReply, ScriptedLLM
from dcbrain.brain import DCBrain, TokenBudget
from dcbrain.exceptions import TFLLMError
from dcbrain.llm import cl100k_base_length, count_message_tokens
from dcbrain.usage import Usage
from support.brain_scripts import plan, verdict

MESSAGES = [{"role": "user", "content": "q"}]


class NoUsageLLM(support_llms.NoUsageLLM):
    """A provider that reports no token usage."""

    max_output_tokens = 4096


def test_output_tokens_a_provider_did_not_report_are_counted() -> None:
    result = DCBrain(default_llm=NoUsageLLM("word " * 2000)).run("q")
    assert (result.status, result.reason) == ("succeeded", "direct_answer")
    assert result.usage.completion_tokens == cl100k_base_length("word " * 2000)
    finished = [e for e in result.events if e["type"] == "call_finished" and e["kind"] == "llm"]
    assert finished[0]["completion_tokens"] == cl100k_base_length("word " * 2000)


def test_the_budget_counts_a_reply_without_usage_handed_to_it_directly() -> None:
    budget = TokenBudget(100_000)
    llm = NoUsageLLM("")
    budget.before_call(llm, MESSAGES, 4096)
    budget.after_call(llm, MESSAGES, LLMReply(content="word " * 50, model="m"), 0.1)
    assert budget.usage.prompt_tokens == count_message_tokens(MESSAGES)
    assert budget.usage.completion_tokens == cl100k_base_length("word " * 50)
    assert budget.remaining == 100_000 - budget.used


def test_a_failed_llm_call_gives_its_reservation_back() -> None:
    flaky = ScriptedLLM([TFLLMError("HTTP 503"), "fine"], max_output_tokens=3000)
    ask = Chain(name="ask", llm=flaky, prompt="{{ text }}")
    # a repeated plan is refused, so the retry is written differently
    planner = ScriptedLLM([plan("return ask(text='hi')"), plan("answer = ask(text='hi')\n"
                                                               "return answer")],
                          max_output_tokens=300)
    validator = ScriptedLLM([verdict(True)], max_output_tokens=50)
    brain = DCBrain(spec_chains={"ask": ask}, default_llm=planner,
                    default_validate_llm=validator, max_tokens=7000)
    result = brain.run("q", conversation_id="c1")
    assert (result.status, result.reason, result.final_result) == (
        "succeeded", "validated", "fine"
    )
    assert result.usage.total_tokens <= 7000
    llm_calls = [e for e in result.events if e["type"].startswith("call_") and e["kind"] == "llm"]
    started = {e["call_id"] for e in llm_calls if e["type"] == "call_started"}
    finished = {e["call_id"]: e for e in llm_calls if e["type"] == "call_finished"}
    assert started == set(finished)
    failed = [e for e in finished.values() if e.get("error")]
    assert len(failed) == 1
    assert failed[0]["error"] == "TFLLMError: HTTP 503" and failed[0]["phase"] == "run"
    assert failed[0]["completion_tokens"] == 0 and failed[0]["duration_s"] >= 0


def test_call_failed_releases_only_that_calls_reservation() -> None:
    budget = TokenBudget(10_000)
    llm = NoUsageLLM("")
    first, second = [{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]
    budget.before_call(llm, first, 1000)
    budget.before_call(llm, second, 2000)
    held = 10_000 - budget.remaining
    budget.call_failed(llm, first, TFLLMError("down"), 0.5)
    assert 10_000 - budget.remaining == held - (count_message_tokens(first) + 1000)
    budget.after_call(llm, second, LLMReply(content="x", usage=Usage.of_call("m", 5, 1)), 0.1)
    assert budget.remaining == 10_000 - 6 and budget.used == 6
