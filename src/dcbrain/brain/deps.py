"""RunDeps: what one run uses that is not the brain's configuration.

A :class:`~dcbrain.brain.DCBrain` is shared by every run and never changes; whatever
differs between runs — where the conversation is kept, where failed attempts go, the
call journal a replay reads, the clock its time budget is decided on, the mailbox new
user input arrives in, who sees its events — travels with the run in a :class:`RunDeps`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from dcbrain.events import CallFinished, Event
from dcbrain.usage import Usage

if TYPE_CHECKING:
    from dcbrain.approvals import ApprovalDesk
    from dcbrain.journal import CallJournal
    from dcbrain.memory import Recall
    from dcbrain.neural import Neural

Clock = Callable[[], float]
EventCallback = Callable[[Event], None]


class RunMemory(Protocol):
    """What a run asks of its memory: a :class:`~dcbrain.memory.Memory` is one, and so
    is a durable run's recorded view of one."""

    async def acommit_message(self, conversation_id: str, message: Any) -> Any: ...

    async def arecall(self, conversation_id: str, current_input: str,
                      memory_chunk_size: Any = None) -> Recall | None: ...


class AttemptStore(Protocol):
    """Key/values where a conversation's failed attempts are kept between runs (a
    :class:`~dcbrain.memory.RunStore` is one, and so is a durable store)."""

    def put_value(self, key: str, value: Any) -> None: ...

    def get_value(self, key: str, default: Any = None) -> Any: ...

    def delete_value(self, key: str) -> bool: ...


@dataclass(frozen=True)
class Resumption:
    """A run executing again after the process running it stopped.

    Its event log goes on at ``first_seq`` after the earlier executions' events; it
    first closes their open calls (``interrupted``) and says it resumed (execution
    ``execution``, why: ``reason``); its result counts the earlier executions' ``usage``
    and wall time (``duration_s``) too.
    """

    execution: int
    reason: str
    first_seq: int
    usage: Usage = field(default_factory=Usage)
    duration_s: float = 0.0
    interrupted: tuple[CallFinished, ...] = ()
    #: Calls whose decision an earlier execution already announced (``approval_decided``).
    decided: frozenset[str] = frozenset()
    #: The earlier execution committed the question to memory (an in-process run that
    #: returned ``waiting``): this one does not again.
    question_kept: bool = False


@dataclass(frozen=True)
class RunDeps:
    """The per-run dependencies of a brain run; ``None`` means the brain's default.

    ``memory`` keeps the conversation and is what planning recalls (default: the brain's
    ``memory``); ``run_store`` keeps the conversation's earlier failed attempts (default:
    the brain's memory when it is also a run store, else this process only); ``journal``
    the run's finished calls (a persisted one replays a run); ``clock`` the monotonic
    seconds of its wall-time budget; ``mailbox`` the :class:`~dcbrain.neural.Neural` new
    user input is posted to (default: the brain's); ``subscribers`` see every event;
    ``resumed`` says what earlier executions of a resumed run did; ``approvals`` is the
    desk where its calls wait for a person's decision (default: the brain's board).
    """

    memory: RunMemory | None = None
    run_store: AttemptStore | None = None
    journal: CallJournal | None = None
    clock: Clock = field(default=time.monotonic)
    mailbox: Neural | None = None
    subscribers: Sequence[EventCallback] = ()
    resumed: Resumption | None = None
    approvals: ApprovalDesk | None = None

    def with_subscriber(self, subscriber: EventCallback | None) -> RunDeps:
        """These dependencies with one more event subscriber (none when ``None``)."""
        if subscriber is None:
            return self
        return replace(self, subscribers=(*self.subscribers, subscriber))
