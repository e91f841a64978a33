"""Eager execution: a streamed plan's read-only calls start before the planner finished
writing it; calls with side effects wait for the whole plan and its check.

The planner is an OpenAI-compatible server over loopback streaming at a set token rate.
Its stream can be held after a given line until a read-only call has started: a run
that did not start that call early would never see the rest of its plan (the stream
gives up after a while and the test fails).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import Any

import pytest

from dcbrain import OpenAILLM, ScriptedLLM, Tool
from dcbrain.brain import DCBrain
from dcbrain.brain.deps import RunDeps
from dcbrain.journal import CallJournal
from dcbrain.llm.fake_server import ScriptedOpenAIServer, ScriptedReply
from support.brain_scripts import plan, verdict

#: How long a held stream waits for the early call before it goes on without it.
HOLD_S = 20.0


class HeldServer(ScriptedOpenAIServer):
    """Streams each reply, holding it after the line ``hold_after`` until ``go`` is set;
    ``finished`` is set once a reply's last token was sent."""

    def __init__(self, replies: Iterable[Any], hold_after: str | None, **kwargs: Any) -> None:
        super().__init__(replies, **kwargs)
        self.hold_after = hold_after
        self.go = threading.Event()
        self.finished = threading.Event()
        self.held_until_go: list[bool] = []

    def _chunks(self, reply: ScriptedReply, body: dict[str, Any]
                ) -> Iterable[dict[str, Any] | None]:
        self.finished.clear()
        written = ""
        held = False
        for chunk in super()._chunks(reply, body):
            if chunk is not None and chunk.get("choices"):
                delta = chunk["choices"][0]["delta"].get("content") or ""
                if chunk["choices"][0]["finish_reason"] is not None:
                    self.finished.set()  # every token of the reply was sent
                written += delta
            yield chunk  # sent: then the stream may be held
            if (not held and self.hold_after is not None
                    and f"{self.hold_after}\n" in written):
                held = True
                self.held_until_go.append(self.go.wait(HOLD_S))


class Calls:
    """Tools that note their calls, and whether the planner's reply had ended by then."""

    def __init__(self, server: HeldServer) -> None:
        self.server = server
        self.log: list[tuple[str, str, bool]] = []

    def tools(self) -> list[Tool]:
        def lookup(key: str) -> str:
            """Look a key up."""
            self.log.append(("lookup", key, self.server.finished.is_set()))
            self.server.go.set()
            return key.upper()

        def send(text: str) -> str:
            """Send a text."""
            self.log.append(("send", text, self.server.finished.is_set()))
            return f"sent {text}"

        return [Tool(lookup, side_effects=False), Tool(send)]


def run(replies: list[Any], *, eager: bool, hold_after: str | None = None,
        validations: int = 1) -> tuple[Any, Calls, HeldServer, CallJournal]:
    with HeldServer(replies, hold_after, tokens_per_second=400) as server:
        calls = Calls(server)
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0)
        brain = DCBrain(default_plan_llm=llm,
                        default_llm=ScriptedLLM([verdict(True)] * validations),
                        tools=calls.tools(), eager=eager)
        journal = CallJournal()

        async def go() -> Any:
            async with brain.start_run("q", deps=RunDeps(journal=journal)) as brain_run:
                return await brain_run.execute()

        result = asyncio.run(go())
    return result, calls, server, journal


#: What a run's call events say, apart from their timing.
def call_events(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["type"], e.get("kind"), e.get("name"), e.get("reused"), e.get("status"),
             e.get("line"), repr(e.get("result")))
            for e in events if e["type"] in ("call_started", "call_finished")
            and e.get("kind") != "llm"]


def story(events: list[dict[str, Any]]) -> list[str]:
    """The run's event types, without the ones whose number depends on timing."""
    return [e["type"] for e in events if e["type"] not in ("plan_delta", "budget")]


def keys(journal: CallJournal) -> list[str]:
    return [entry.key.text for entry in journal.entries()]


PLAN = 'a = lookup(key="x")\nb = lookup(key="y")\nc = a + b\nreturn send(text=c)'


def test_the_first_read_only_call_starts_before_the_last_token_arrives() -> None:
    result, calls, server, _ = run([plan(PLAN)], eager=True,
                                         hold_after='a = lookup(key="x")')
    assert result.status == "succeeded", result.error
    assert result.final_result == "sent XY"
    assert server.held_until_go == [True]  # the stream went on once lookup had started
    assert calls.log[0] == ("lookup", "x", False)
    assert ("send", "XY", True) in calls.log


def test_without_eager_execution_the_calls_wait_for_the_whole_plan() -> None:
    result, calls, _, _ = run([plan(PLAN)], eager=False)
    assert result.final_result == "sent XY"
    assert all(finished for _, _, finished in calls.log)


def test_an_eager_run_emits_and_journals_what_a_run_without_it_does() -> None:
    eager, eager_calls, _, eager_journal = run([plan(PLAN)], eager=True,
                                               hold_after='a = lookup(key="x")')
    plain, plain_calls, _, plain_journal = run([plan(PLAN)], eager=False)
    assert call_events(eager.events) == call_events(plain.events)
    assert story(eager.events) == story(plain.events)
    assert keys(eager_journal) == keys(plain_journal)
    assert [call[:2] for call in eager_calls.log] == [call[:2] for call in plain_calls.log]
    assert eager.reused_calls == plain.reused_calls == 0


def test_a_consequential_call_never_starts_before_the_whole_plan_passed_its_check() -> None:
    early_send = 'a = lookup(key="x")\nsend(text=a)\nb = lookup(key="y")\nreturn b'
    result, calls, _, _ = run([plan(early_send)], eager=True, hold_after='a = lookup(key="x")')
    assert result.status == "succeeded", result.error
    assert calls.log[0] == ("lookup", "x", False)
    # after the call with side effects, nothing starts early: not even read-only calls
    assert calls.log[1:] == [("send", "X", True), ("lookup", "y", True)]


def test_a_consequential_call_of_a_plan_whose_end_breaks_the_check_never_runs() -> None:
    broken = 'a = lookup(key="x")\nsend(text=a)\nreturn undefined_tool(a)'
    fixed = 'return lookup(key="z")'
    result, calls, _, _ = run([plan(broken), plan(fixed)], eager=True,
                              hold_after='a = lookup(key="x")')
    assert result.final_result == "Z"
    assert [call[0] for call in calls.log] == ["lookup", "lookup"]


def test_a_plan_whose_last_statement_breaks_the_check_drops_the_early_results_and_replans(
) -> None:
    broken = 'a = lookup(key="x")\nb = lookup(key="y")\nreturn no_such_tool(a + b)'
    fixed = 'a = lookup(key="x")\nreturn send(text=a)'
    replies = [plan(broken), plan(fixed)]
    eager, eager_calls, _, eager_journal = run(replies, eager=True,
                                               hold_after='a = lookup(key="x")')
    plain, plain_calls, _, plain_journal = run(replies, eager=False)
    assert eager.status == plain.status == "succeeded"
    assert eager.final_result == plain.final_result == "sent X"
    # the first plan's lookups ran early, their results were not used: the second plan
    # called lookup again, as the run without eager execution did
    assert [call[:2] for call in eager_calls.log] == [
        ("lookup", "x"), ("lookup", "y"), ("lookup", "x"), ("send", "X")]
    assert [call[:2] for call in plain_calls.log] == [("lookup", "x"), ("send", "X")]
    failed = [e for e in eager.events if e["type"] == "plan_finished" and not e["ok"]]
    assert len(failed) == 1 and "no_such_tool" in failed[0]["error"]
    assert call_events(eager.events) == call_events(plain.events)
    assert story(eager.events) == story(plain.events)
    assert keys(eager_journal) == keys(plain_journal)
    assert not any(key.startswith("1|") and "lookup" in key for key in keys(eager_journal))


def test_a_reply_whose_plan_is_another_block_drops_the_early_results() -> None:
    # a python block first, then the tf_plan block, which is the plan
    reply = ('Draft:\n```python\nx = lookup(key="x")\n```\n'
             'Plan:\n```tf_plan\nreturn lookup(key="z")\n```')
    eager, calls, _, eager_journal = run([reply], eager=True, hold_after='x = lookup(key="x")')
    plain, _, _, plain_journal = run([reply], eager=False)
    assert eager.final_result == plain.final_result == "Z"
    assert [call[:2] for call in calls.log] == [("lookup", "x"), ("lookup", "z")]
    assert call_events(eager.events) == call_events(plain.events)
    assert keys(eager_journal) == keys(plain_journal)


@pytest.mark.parametrize("text, complete", [
    ('a = lookup(key="x")\nfor k in ["y"]:\n    lookup(key=k)\n', 1),
    ('a = lookup(key="x")\nfor k in ["y"]:\n    lookup(key=k)\nb = 1\n', 3),
    ('a = lookup(key="""x\nb = send(text="no")\n', 0),
    ('a = lookup(key="x")\nb = {\n  "k": 1,\n', 1),
    ('if a:\n    b = 1\nelse:\n    b = 2\n', 0),
])
def test_statements_count_once_complete(text: str, complete: int) -> None:
    from dcbrain.tfplan.feed import PlanFeed

    feed = PlanFeed()
    feed.add("Plan:\n```tf_plan\n")
    for piece in text:
        feed.add(piece)
    assert len(feed.statements) == complete


# -- chains run early too -------------------------------------------------------------------

class NotingLLM(ScriptedLLM):
    """A chain's model that notes when it was asked, and whether the plan was written."""

    def __init__(self, replies: list[Any], server: HeldServer) -> None:
        super().__init__(replies)
        self.server = server
        self.asked: list[bool] = []

    async def _achat(self, *args: Any, **kwargs: Any) -> Any:
        self.asked.append(self.server.finished.is_set())
        self.server.go.set()
        return await super()._achat(*args, **kwargs)


def run_with_chain(replies: list[Any], *, eager: bool, hold_after: str | None = None,
                   chain_replies: list[str] | None = None
                   ) -> tuple[Any, Calls, NotingLLM, CallJournal]:
    from dcbrain import Chain, SQLiteMemory
    from dcbrain.chain.prompts import AdditionalInfoPrompt, MemoPrompt

    with HeldServer(replies, hold_after, tokens_per_second=400) as server, \
            SQLiteMemory(":memory:") as memory:
        memory.commit_message("c1", "my name is Ada")  # the chain reads the conversation
        calls = Calls(server)
        model = NotingLLM(chain_replies or ["short"], server)
        summarize = Chain(name="summarize", llm=model,
                          prompt=[MemoPrompt(), AdditionalInfoPrompt("Summarize {{ text }}")],
                          description="Summarize a text.")
        llm = OpenAILLM("scripted-model", base_url=server.base_url, api_key="none",
                        max_retries=0)
        brain = DCBrain(default_plan_llm=llm, default_llm=ScriptedLLM([verdict(True)] * 2),
                        spec_chains={"summarize": summarize}, tools=calls.tools(),
                        eager=eager, memory=memory)
        journal = CallJournal()

        async def go() -> Any:
            async with brain.start_run("q", "c1", deps=RunDeps(journal=journal)) as brain_run:
                return await brain_run.execute()

        result = asyncio.run(go())
    return result, calls, model, journal


def llm_calls(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((e["type"], e.get("name")) for e in events if e.get("kind") == "llm")


def without_llm(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("kind") != "llm"]


CHAIN_PLAN = ('s = summarize(text="a long text")\nb = lookup(key="y")\n'
              'return send(text=s + b)')


def test_a_chain_call_starts_before_the_last_token_and_runs_once() -> None:
    eager, calls, model, eager_journal = run_with_chain(
        [plan(CHAIN_PLAN)], eager=True, hold_after='s = summarize(text="a long text")')
    plain, _, plain_model, plain_journal = run_with_chain(
        [plan(CHAIN_PLAN)], eager=False)
    assert eager.status == "succeeded", eager.error
    assert eager.final_result == plain.final_result == "sent shortY"
    assert model.asked == [False]  # once, while the plan was still being written
    assert plain_model.asked == [True]
    assert model.calls == plain_model.calls  # asked the same, with the same context
    assert "my name is Ada" in str(model.calls)
    assert calls.log[-1] == ("send", "shortY", True)
    assert call_events(eager.events) == call_events(plain.events)
    # the chain's LLM call is announced when it is made (while the plan is written),
    # the chain's call when the whole plan takes its result
    assert llm_calls(eager.events) == llm_calls(plain.events)
    assert story(without_llm(eager.events)) == story(without_llm(plain.events))
    assert keys(eager_journal) == keys(plain_journal)
    # the chain's tokens count once in the run's budget, as without eager execution
    assert eager.usage == plain.usage
    assert eager.usage.per_model["scripted"].requests == 2  # the chain's and the check's


def test_a_plan_whose_end_breaks_the_check_drops_an_early_chain_result_and_replans() -> None:
    broken = 's = summarize(text="a long text")\nreturn no_such_tool(s)'
    fixed = 's = summarize(text="a long text")\nreturn send(text=s)'
    eager, _, model, eager_journal = run_with_chain(
        [plan(broken), plan(fixed)], eager=True,
        hold_after='s = summarize(text="a long text")', chain_replies=["early", "late"])
    plain, _, plain_model, plain_journal = run_with_chain(
        [plan(broken), plan(fixed)], eager=False, chain_replies=["late"])
    assert eager.status == plain.status == "succeeded", eager.error
    # the first plan's early summary was dropped: the second plan asked the chain again
    # (early too: the second plan streams as well)
    assert model.asked == [False, False]
    assert eager.final_result == plain.final_result == "sent late"
    assert plain_model.asked == [True]
    assert call_events(eager.events) == call_events(plain.events)
    assert keys(eager_journal) == keys(plain_journal)
    # the dropped early call's tokens were spent: the run's budget counts them (once)
    chain_requests = eager.usage.per_model["scripted"].requests
    assert chain_requests == plain.usage.per_model["scripted"].requests + 1


def test_a_chain_that_may_call_a_consequential_tool_waits_for_the_whole_plan() -> None:
    from dcbrain import Chain
    from dcbrain.brain.eager import early_chain

    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    def send(text: str) -> str:
        """Send a text."""
        return text

    llm = ScriptedLLM(["x"])
    assert early_chain(Chain(name="reader", llm=llm, tools=[Tool(lookup, side_effects=False)]))
    assert not early_chain(Chain(name="sender", llm=llm, tools=[Tool(send)]))
    assert not early_chain(Chain(name="asked", llm=llm, requires_approval=True))
