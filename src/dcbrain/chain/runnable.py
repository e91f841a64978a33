"""What a chain and a container of chains share: a name, schemas, and one run interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dcbrain._sync import run_sync
from dcbrain.chain.prompts import Knowledge
from dcbrain.chain.result import ChainResult
from dcbrain.messages import TextMessage, as_message
from dcbrain.retries import RetryPolicy
from dcbrain.tfplan.errors import TFToolTimeout
from dcbrain.tools import ApprovalRule, SchemaTool, Tool, ToolLike, within_timeout
from dcbrain.values.jsonsafe import dumps

MessageLike = TextMessage | dict[str, Any]

#: Keyword arguments whose value becomes the text of the input message.
TEXT_KWARGS = ("input", "input_text", "text")


@dataclass(frozen=True)
class ChainRun:
    """What one run of a chain works on: the input message and what came with it.

    ``conversation`` is read by a :class:`MemoPrompt`, ``knowledge`` by a
    :class:`KnowledgePrompt`; ``tools`` add to a chain's own tools; ``intermediate_msgs``
    are sent after the prompts.
    """

    current_input: TextMessage
    conversation: Sequence[TextMessage | str] | None = None
    knowledge: Knowledge = None
    tools: Sequence[ToolLike] | None = None
    intermediate_msgs: Sequence[MessageLike] | None = None

    async def on(self, child: Runnable, current_input: TextMessage | None = None) -> ChainResult:
        """``child``'s run on the same inputs (on ``current_input`` instead, when given)."""
        message = self.current_input if current_input is None else current_input
        return await child.async_run(message, self.conversation, self.knowledge, self.tools,
                                     self.intermediate_msgs)


class Runnable(ABC):
    """Base of :class:`Chain` and :class:`Chains`: ``run``/``async_run`` on a message."""

    name: str
    description: str
    #: Whether a replan may get a recorded result of this chain instead of running it
    #: again (the run's call journal).
    reuse: bool = True
    #: Seconds a run may take before it is cancelled with :class:`TFToolTimeout`.
    timeout_s: float | None = None
    #: How a plan tries a failed call of this chain again (``None``: it does not).
    retry: RetryPolicy | None = None
    #: Whether a plan's call waits for a person's decision (``True`` or a predicate).
    requires_approval: ApprovalRule = False
    #: Seconds a call waits for a decision before it is denied; ``None``: the brain's.
    approval_timeout_s: float | None = None

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

    def as_tool(self, *, name: str | None = None, description: str | None = None) -> Tool:
        """This chain as a tool: keyword arguments in, the result's ``content`` out.

        Agents, chains and plans take it wherever they take tools; ``as_tool`` is called
        for them when a chain is given as a tool. Values are passed on as a plan passes
        them to a chain (its templates render dicts and lists as JSON): only the argument
        names are checked.
        """
        async def call(**kwargs: Any) -> Any:
            return (await self.async_run(**kwargs)).content

        tool = SchemaTool(
            call,
            name=name or self.name,
            description=self.description if description is None else description,
            parameters_schema=self.input_schema,
            returns_schema=self.output_schema,
            check_values=False,
        )
        tool.retry = self.retry
        tool.requires_approval = self.requires_approval
        tool.approval_timeout_s = self.approval_timeout_s
        return tool

    def run(self, current_input: str | TextMessage | None = None,
            conversation: Sequence[TextMessage | str] | None = None, knowledge: Knowledge = None,
            tools: Sequence[ToolLike] | None = None,
            intermediate_msgs: Sequence[MessageLike] | None = None, **inputs: Any) -> ChainResult:
        """Blocking :meth:`async_run`: ``chain.run("text")`` or ``chain.run(topic="x")``."""
        return run_sync(
            lambda: self.async_run(current_input, conversation, knowledge, tools,
                                   intermediate_msgs, **inputs)
        )

    async def async_run(
        self,
        current_input: str | TextMessage | None = None,
        conversation: Sequence[TextMessage | str] | None = None,
        knowledge: Knowledge = None,
        tools: Sequence[ToolLike] | None = None,
        intermediate_msgs: Sequence[MessageLike] | None = None,
        **inputs: Any,
    ) -> ChainResult:
        """Run on ``current_input`` (a str becomes a user message), or on keyword inputs.

        Keyword ``inputs`` are the template variables (a plan's call arguments): they go
        into the message's ``additional_kwargs``, and ``input``/``input_text``/``text``,
        else all of them as JSON, becomes its text when no ``current_input`` is given.
        """
        work = self._async_run(ChainRun(input_message(current_input, inputs), conversation,
                                        knowledge, tools, intermediate_msgs))
        if self.timeout_s is None:
            return await work
        return await within_timeout(work, self.timeout_s, self._timed_out)

    def _timed_out(self) -> TFToolTimeout:
        return TFToolTimeout(f"chain {self.name!r} did not finish within its timeout_s of "
                             f"{self.timeout_s:g} s")


    @abstractmethod
    async def _async_run(self, run: ChainRun) -> ChainResult: ...


def input_message(
    current_input: str | TextMessage | None, inputs: Mapping[str, Any]
) -> TextMessage:
    """The message a run works on: ``current_input`` with ``inputs`` added to its
    ``additional_kwargs``, or a new user message built from ``inputs`` alone."""
    if current_input is not None:
        message = as_message(current_input)
        message.additional_kwargs.update(inputs)
        return message
    return TextMessage(content=input_text(inputs), additional_kwargs=dict(inputs))


def input_text(inputs: Mapping[str, Any]) -> str:
    """The text of a message built from keyword inputs: ``input``/``input_text``/``text``
    (JSON unless a string), else all of them as JSON (``""`` when there are none)."""
    for key in TEXT_KWARGS:
        if key in inputs:
            value = inputs[key]
            return value if isinstance(value, str) else to_json(value)
    return to_json(dict(inputs)) if inputs else ""


def to_json(value: Any) -> str:
    """JSON text of input data: sets as sorted lists, anything else not JSON as its text
    (see :mod:`dcbrain.values.jsonsafe`)."""
    return dumps(value)
