"""Retries: a tool's transient failure is tried again, each try journaled and announced,
and a plan that a transient failure ended may be run again."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from dcbrain import Chain, DCBrain, FunctionLLM, ScriptedLLM
from dcbrain.brain import RunDeps
from dcbrain.exceptions import TFLLMUnavailable, TransientError
from dcbrain.journal import CallJournal, JournalEntry
from dcbrain.retries import Backoff
from dcbrain.tfplan.interpreter import Isolation
from dcbrain.tools import Tool
from support.brain_scripts import plan, verdict

ISOLATIONS: list[Isolation] = ["process", "inprocess"]
SEND = 'return send_mail(to="ops@example.org")'


class Mailer:
    """A mail tool whose first tries fail with the errors it is given."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.tries: list[str] = []
        self._lock = threading.Lock()

    def send_mail(self, to: str) -> str:
        """Send the daily report to ``to``."""
        with self._lock:
            self.tries.append(to)
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        return f"sent to {to}"


def mail_brain(tool: Tool, planner_replies: list[Any], validator_replies: list[Any],
               isolation: Isolation = "process") -> tuple[DCBrain, ScriptedLLM]:
    planner = ScriptedLLM(planner_replies)
    brain = DCBrain(default_llm=planner, default_validate_llm=ScriptedLLM(validator_replies),
                    tools=[tool], isolation=isolation)
    return brain, planner


def of_type(result: Any, kind: str) -> list[dict[str, Any]]:
    return [event for event in result.events if event["type"] == kind]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_tool_that_fails_twice_to_connect_is_tried_again_and_the_run_succeeds(
    isolation: Isolation,
) -> None:
    mailer = Mailer(ConnectionError("connection reset by peer"), ConnectionError("refused"))
    tool = Tool(mailer.send_mail, retries=3, backoff=Backoff(initial_s=0.01, max_s=0.02))
    brain, _ = mail_brain(tool, [plan(SEND)], [verdict(True)], isolation)
    result = brain.run("send the report", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "sent to ops@example.org")
    assert len(mailer.tries) == 3
    started, finished = of_type(result, "call_started"), of_type(result, "call_finished")
    tool_calls = [event for event in started if event["kind"] == "tool"]
    assert len(tool_calls) == 1
    assert [e["status"] for e in finished if e["kind"] == "tool"] == ["ok"]
    retries = of_type(result, "call_retry")
    assert [(e["attempt"], e["attempts"], e["error"]) for e in retries] == [
        (1, 4, "ConnectionError: connection reset by peer"), (2, 4, "ConnectionError: refused")]
    assert all(e["call_id"] == tool_calls[0]["call_id"] and e["line"] == 1 for e in retries)
    assert all(0.005 <= e["delay_s"] <= 0.02 for e in retries)


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_retries_that_run_out_are_a_positioned_error_the_planner_sees(
    isolation: Isolation,
) -> None:
    mailer = Mailer(*[TimeoutError("SMTP server did not answer")] * 3)
    tool = Tool(mailer.send_mail, retries=2, backoff=0)
    brain, planner = mail_brain(tool, [plan("x = 1\n" + SEND), plan("return 'later'")],
                                [verdict(True)], isolation)
    result = brain.run("send the report", conversation_id="c1")
    assert result.status == "succeeded" and len(mailer.tries) == 3
    assert len(of_type(result, "call_retry")) == 2
    [failed] = [e for e in of_type(result, "plan_finished") if not e["ok"]]
    assert failed["error_kind"] == "RetriesExhausted"
    assert failed["error"].startswith(
        "2:8: RetriesExhausted: send_mail() failed: TimeoutError: SMTP server did not answer "
        "(failed 3 tries, each with a transient error)")
    told = "\n".join(str(message["content"]) for message in planner.calls[1])
    assert "2:8: RetriesExhausted: send_mail() failed" in told


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_an_error_that_is_not_transient_is_not_retried(isolation: Isolation) -> None:
    mailer = Mailer(ValueError("no such mailbox"))
    tool = Tool(mailer.send_mail, retries=3, backoff=0)
    brain, _ = mail_brain(tool, [plan(SEND), plan("return 'gave up'")], [verdict(True)],
                          isolation)
    result = brain.run("send the report", conversation_id="c1")
    assert len(mailer.tries) == 1 and of_type(result, "call_retry") == []
    [failed] = [e for e in of_type(result, "plan_finished") if not e["ok"]]
    assert failed["error_kind"] == "ValueError"


def test_only_the_errors_of_retry_on_are_retried() -> None:
    mailer = Mailer(ConnectionError("refused"), KeyError("quota"))
    tool = Tool(mailer.send_mail, retries=3, retry_on=(KeyError,), backoff=0)
    brain, _ = mail_brain(tool, [plan(SEND), plan("return 'gave up'")], [verdict(True)])
    result = brain.run("send the report", conversation_id="c1")
    assert len(mailer.tries) == 1 and of_type(result, "call_retry") == []


class Crash(BaseException):
    """The process dying: nothing after it runs, nothing records it."""


def test_a_replayed_run_goes_on_after_the_last_failed_try_it_recorded() -> None:
    # The first execution dies in the third try, after recording two failed ones.
    first = Mailer(ConnectionError("reset"), ConnectionError("reset"), Crash())
    journal = CallJournal()
    brain, _ = mail_brain(Tool(first.send_mail, retries=3, backoff=0), [plan(SEND)], [])
    with pytest.raises(Crash):
        asyncio.run(brain.async_run("send the report", conversation_id="c1", run_id="run-9",
                                    deps=RunDeps(journal=journal)))
    recorded = [(e.kind, e.key.name, e.key.failed_try, e.ok) for e in journal.entries()]
    assert recorded == [("llm", "__planner__", 0, True), ("tool", "send_mail", 1, False),
                        ("tool", "send_mail", 2, False)]
    stored = [JournalEntry.from_dict(entry.to_dict()) for entry in journal.entries()]
    # The replay asks no planner (its reply is recorded) and makes only the third try.
    again = Mailer()
    replay, _ = mail_brain(Tool(again.send_mail, retries=3, backoff=0), [], [verdict(True)])
    result = asyncio.run(replay.async_run("send the report", conversation_id="c1",
                                          run_id="run-9",
                                          deps=RunDeps(journal=CallJournal(stored))))
    assert (result.status, result.final_result) == ("succeeded", "sent to ops@example.org")
    assert len(again.tries) == 1


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_same_plan_may_run_again_after_a_failure_the_tool_declared_transient(
    isolation: Isolation,
) -> None:
    mailer = Mailer(TransientError("SMTP 451 try again"))
    brain, _ = mail_brain(Tool(mailer.send_mail), [plan(SEND), plan(SEND)], [verdict(True)],
                          isolation)
    result = brain.run("send the report", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "sent to ops@example.org")
    assert [e for e in of_type(result, "plan_finished") if e.get("skipped")] == []
    assert len(mailer.tries) == 2


def test_the_same_plan_may_run_again_after_its_retries_ran_out() -> None:
    mailer = Mailer(*[ConnectionError("refused")] * 2)
    tool = Tool(mailer.send_mail, retries=1, backoff=0)
    brain, _ = mail_brain(tool, [plan(SEND), plan(SEND)], [verdict(True)])
    result = brain.run("send the report", conversation_id="c1")
    assert result.status == "succeeded" and len(mailer.tries) == 3
    assert [e for e in of_type(result, "plan_finished") if e.get("skipped")] == []


@pytest.mark.parametrize("error", [ValueError("no such mailbox"), ConnectionError("refused")])
def test_the_same_plan_is_still_refused_after_a_failure_that_is_not_transient(
    error: Exception,
) -> None:
    # without retries, a ConnectionError is not a transient failure the tool declared
    mailer = Mailer(error)
    brain, _ = mail_brain(Tool(mailer.send_mail),
                          [plan(SEND), plan(SEND), plan("return 'later'")], [verdict(True)])
    result = brain.run("send the report", conversation_id="c1")
    assert result.status == "succeeded" and len(mailer.tries) == 1
    [skipped] = [e for e in of_type(result, "plan_finished") if e.get("skipped")]
    assert skipped["error_kind"] == "repeated_plan"


async def test_an_async_tool_is_retried_on_the_loop() -> None:
    failures = [ConnectionError("reset")]

    async def fetch_rate(currency: str) -> float:
        """The exchange rate of ``currency``."""
        if failures:
            raise failures.pop()
        await asyncio.sleep(0)
        return 1.25

    brain, _ = mail_brain(Tool(fetch_rate, retries=2, backoff=0),
                          [plan('return fetch_rate(currency="EUR")')], [verdict(True)])
    result = await brain.async_run("rate?", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", 1.25)
    assert [e["attempt"] for e in of_type(result, "call_retry")] == [1]


def test_a_chain_with_retries_is_tried_again_when_its_provider_is_unavailable() -> None:
    replies: list[Any] = [TFLLMUnavailable("HTTP 503: overloaded"), "a short summary"]

    def provider(messages: list[dict[str, Any]]) -> Any:
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    summarize = Chain(name="summarize", llm=FunctionLLM(provider), prompt="{{ input }}",
                      description="Summarize a text.", retries=1, backoff=0)
    brain = DCBrain({"summarize": summarize}, default_llm=ScriptedLLM(
        [plan('return summarize(input="a long text")')]),
        default_validate_llm=ScriptedLLM([verdict(True)]))
    result = brain.run("summarize", conversation_id="c1")
    assert (result.status, result.final_result) == ("succeeded", "a short summary")
    [retry] = of_type(result, "call_retry")
    assert (retry["kind"], retry["name"], retry["attempt"]) == ("chain", "summarize", 1)
    assert retry["error"] == "TFLLMUnavailable: HTTP 503: overloaded"
