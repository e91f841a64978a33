"""What a chain and a container of chains share: a name, schemas, and one run interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from dcbrain._sync import run_sync
from dcbrain.chain.prompts import Knowledge
from dcbrain.chain.result import ChainResult
from dcbrain.messages import TextMessage, as_message
from dcbrain.tools import ToolLike

MessageLike = TextMessage | dict[str, Any]


class Runnable(ABC):
    """Base of :class:`Chain` and :class:`Chains`: ``run``/``async_run`` on a message."""

    name: str
    description: str
    #: Whether a replan may get a recorded result of this chain instead of running it
    #: again (the run's call journal).
    reuse: bool = True

    @property
    @abstractmethod
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the keyword arguments a plan passes."""

    @property
    @abstractmethod
    def output_schema(self) -> dict[str, Any]:
        """JSON Schema of the result's content."""

    def describe(self) -> dict[str, Any]:
        """Name, description and schemas, as a planner prompt shows them."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
        }

    def run(
        self,
        current_input: str | TextMessage,
        conversation: Sequence[TextMessage | str] | None = None,
        knowledge: Knowledge = None,
        tools: Sequence[ToolLike] | None = None,
        intermediate_msgs: Sequence[MessageLike] | None = None,
    ) -> ChainResult:
        """Blocking :meth:`async_run`."""
        return run_sync(
            lambda: self.async_run(current_input, conversation, knowledge, tools, intermediate_msgs)
        )

    async def async_run(
        self,
        current_input: str | TextMessage,
        conversation: Sequence[TextMessage | str] | None = None,
        knowledge: Knowledge = None,
        tools: Sequence[ToolLike] | None = None,
        intermediate_msgs: Sequence[MessageLike] | None = None,
    ) -> ChainResult:
        """Run on ``current_input`` (a str becomes a user message); see ``_async_run``."""
        return await self._async_run(
            as_message(current_input), conversation, knowledge, tools, intermediate_msgs
        )

    @abstractmethod
    async def _async_run(
        self,
        current_input: TextMessage,
        conversation: Sequence[TextMessage | str] | None,
        knowledge: Knowledge,
        tools: Sequence[ToolLike] | None,
        intermediate_msgs: Sequence[MessageLike] | None,
    ) -> ChainResult: ...
