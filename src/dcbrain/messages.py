"""Messages exchanged between users, brains, chains and memory."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

CHAINS_INTERMEDIATE_RESULTS = "__chains_intermediate_results"


@dataclass
class TextMessage:
    """A message with text ``content`` and free-form ``additional_kwargs``.

    ``additional_kwargs`` carries a call's keyword arguments into a chain and, under
    :data:`CHAINS_INTERMEDIATE_RESULTS`, the JSON string of results shared between the
    sub-chains of one plan.
    """

    content: str
    role: str = "user"
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)

    def to_openai(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


def as_message(value: str | TextMessage, role: str = "user") -> TextMessage:
    return value if isinstance(value, TextMessage) else TextMessage(content=value, role=role)
