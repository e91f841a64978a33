"""ChainResult: what a chain, a container of chains or a plan produced, and how results add up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dcbrain.messages import TextMessage
from dcbrain.usage import Usage, merge_usages

ChainOutput = str | dict[str, Any]


@dataclass
class ChainResult:
    """The outcome of a chain run.

    ``content`` is the output (text, or a dict for structured output); ``origin`` the
    input message; ``current_generate`` the model's last message; ``usage`` the tokens of
    every LLM call; ``intermediate_msgs`` the messages exchanged besides the prompt (tool
    calls and returns, retries); ``tool_returns`` one record per tool call; ``logs`` a
    readable trace. ``output`` is the output as Python callers want it: an instance of
    the chain's ``output_type`` when it has one, else the same value as ``content``.
    """

    content: ChainOutput = ""
    output: Any = None
    origin: TextMessage | None = None
    current_generate: TextMessage | None = None
    usage: Usage = field(default_factory=Usage)
    intermediate_msgs: list[dict[str, Any]] = field(default_factory=list)
    tool_returns: list[dict[str, Any]] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.output is None:
            self.output = self.content

    def __iadd__(self, other: ChainResult) -> ChainResult:
        """Accumulate ``other`` (a later result) into this one (usages add up, contents merge).

        Content: two dicts merge (later keys win); otherwise a non-empty later content
        replaces this one, and ``output`` follows the content. ``origin`` keeps the first,
        ``current_generate`` takes the latest; usages are merged; messages, tool returns
        and logs are appended.
        """
        if isinstance(self.content, dict) and isinstance(other.content, dict):
            self.content = {**self.content, **other.content}
            self.output = other.output
        elif other.content not in ("", {}):
            self.content = other.content
            self.output = other.output
        if self.origin is None:
            self.origin = other.origin
        if other.current_generate is not None:
            self.current_generate = other.current_generate
        self.usage = merge_usages([self.usage, other.usage])
        self.intermediate_msgs.extend(other.intermediate_msgs)
        self.tool_returns.extend(other.tool_returns)
        self.logs.extend(other.logs)
        return self
