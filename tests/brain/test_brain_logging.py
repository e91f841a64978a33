"""What a run logs: an abort or a superseded run is a normal stop, a bug is an error."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from dcbrain import ScriptedLLM
from dcbrain.brain import DCBrain
from dcbrain.exceptions import TFUserNewInputError
from dcbrain.neural import Neural
from support.brain_scripts import brain_with_input_during_its_plan, hanging_planner, plan


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


async def test_an_abort_logs_no_error(caplog: pytest.LogCaptureFixture) -> None:
    started, planner = hanging_planner()
    brain = DCBrain(default_llm=planner)
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
    brain = brain_with_input_during_its_plan()
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
