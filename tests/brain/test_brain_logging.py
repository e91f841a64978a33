"""What a run logs: an abort or a superseded run is a normal stop, a bug is an error."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from dcbrain import Chain, FunctionLLM, ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.exceptions import TFUserNewInputError
from dcbrain.neural import Neural
from support.brain_scripts import plan


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


async def test_an_abort_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    started = asyncio.Event()

    async def slow_planner(messages: list[dict[str, Any]]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    brain = DCBrain(default_llm=FunctionLLM(slow_planner))
    run = asyncio.create_task(brain.async_run("q", conversation_id="c1"))
    await started.wait()
    brain.abort()
    assert (await run).reason == "aborted"
    assert errors(caplog) == []


async def test_new_input_before_planning_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    neural = Neural()
    brain = DCBrain(default_llm=ScriptedLLM([plan("return 1")]), neural=neural)
    neural.post_user_input("c1", "something else")
    with pytest.raises(TFUserNewInputError):
        await brain.async_run("q", conversation_id="c1")
    assert errors(caplog) == []


def test_new_input_during_a_plan_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    neural = Neural()

    def user_writes(text: str) -> str:
        """Simulates the user typing while the plan runs."""
        neural.post_user_input("c1", text)
        return "posted"

    summarize = Chain(name="summarize", llm=ScriptedLLM(["never"]), prompt="{{ text }}")
    planner = ScriptedLLM([plan("user_writes(text='stop')\nreturn summarize(text='a')")])
    brain = DCBrain(spec_chains={"summarize": summarize}, default_llm=planner,
                    tools=[user_writes], neural=neural)
    with pytest.raises(TFUserNewInputError):
        brain.run("q", conversation_id="c1")
    assert errors(caplog) == []


def test_an_unexpected_error_is_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(ScriptedLLM):
        async def _achat(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
            raise ZeroDivisionError("bug in a provider")

    result = DCBrain(default_llm=Broken([])).run("q", conversation_id="c1")
    assert result.reason == "error"
    assert any("ZeroDivisionError" in message for message in errors(caplog))
