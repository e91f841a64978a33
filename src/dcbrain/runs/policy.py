"""The supersede policy: a new message replaces a conversation's live run.

The new input is posted to the run's mailbox, so the run stops with
:class:`~dcbrain.exceptions.TFUserNewInputError` at its next safe point; a run that has
not stopped after ``grace_s`` seconds is aborted. Both the in-process server and the
durable worker apply it through :meth:`SupersedePolicy.apply`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from dcbrain.neural import Neural
    from dcbrain.runs.execute import RunRequest

DEFAULT_SUPERSEDE_GRACE_S: Final = 5.0


@dataclass(frozen=True)
class SupersedePolicy:
    """How long a superseded run may take to reach its next safe point."""

    grace_s: float = DEFAULT_SUPERSEDE_GRACE_S

    def __post_init__(self) -> None:
        if self.grace_s < 0:
            raise ValueError("supersede_grace_s must be >= 0")

    def apply(self, request: RunRequest, by: str, text: str, mailbox: Neural) -> None:
        """Tell ``request``'s run that run ``by`` (asking ``text``) replaces it; on the
        run's loop. A run superseded already keeps its first successor."""
        request.superseded_by = request.superseded_by or by
        mailbox.post_user_input(request.conversation_id, text)
        if self.grace_s == 0:
            request.abort()
        else:
            request.timers.append(
                asyncio.get_running_loop().call_later(self.grace_s, request.abort))
