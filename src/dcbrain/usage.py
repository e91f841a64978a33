"""Token usage that adds up across LLM calls, chains, plans and runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """Tokens and requests of one or more LLM calls; ``+`` and ``+=`` add them up."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    per_model: dict[str, Usage] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def of_call(cls, model: str, prompt_tokens: int, completion_tokens: int) -> Usage:
        """The usage of one request to ``model``."""
        inner = cls(prompt_tokens, completion_tokens, 1)
        return cls(prompt_tokens, completion_tokens, 1, {model: inner})

    def __add__(self, other: Usage) -> Usage:
        result = self.copy()
        result += other
        return result

    def __iadd__(self, other: Usage) -> Usage:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        for model, usage in other.per_model.items():
            mine = self.per_model.get(model)
            if mine is None:
                self.per_model[model] = usage.copy()
            else:
                mine += usage
        return self

    def copy(self) -> Usage:
        return Usage(
            self.prompt_tokens,
            self.completion_tokens,
            self.requests,
            {model: usage.copy() for model, usage in self.per_model.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "requests": self.requests,
            "per_model": {model: usage.to_dict() for model, usage in self.per_model.items()},
        }


def merge_usages(usages: Iterable[Usage | None]) -> Usage:
    """Sum usages (``None`` entries are skipped), as the chain layer's ``merge_usages`` contract."""
    total = Usage()
    for usage in usages:
        if usage is not None:
            total += usage
    return total
