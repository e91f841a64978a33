"""What a resumed run carries over from its earlier executions, read from its stored events.

A durable run whose process stopped executes again from its journal. Its events then
tell both executions in order: the earlier ones as stored, the calls they left open
closed ``interrupted`` (they run again, or are replayed), a ``run_resumed`` event, and
the new execution's events after them. Its usage and duration are those of all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dcbrain.brain.deps import Resumption
from dcbrain.events import CallFinished, CallStarted, EventType, parse_payload
from dcbrain.usage import Usage

#: Why a run executes again: the process that executed it stopped before it ended.
WORKER_LOST = "the process executing the run stopped before the run ended"
#: Why a run executes again: people decided the calls it waited for.
APPROVALS_DECIDED = "the calls the run waited for were decided"


def resumption(events: Sequence[dict[str, Any]], execution: int,
               reason: str = WORKER_LOST) -> Resumption:
    """The :class:`Resumption` of execution ``execution`` after the stored ``events``."""
    open_calls: dict[str, dict[str, Any]] = {}
    decided: set[str] = set()
    usage = Usage()
    duration_s = 0.0
    segment_start: float | None = None
    last_ts: float | None = None
    for event in events:
        kind, ts = event.get("type"), event.get("ts")
        # a call closed ``interrupted`` is closed when the next execution begins: its time
        # is that execution's, not the one that stopped
        closing = kind == EventType.CALL_FINISHED and event.get("status") == "interrupted"
        if isinstance(ts, int | float) and not closing:
            if kind == EventType.RUN_RESUMED or segment_start is None:
                if segment_start is not None and last_ts is not None:
                    duration_s += last_ts - segment_start
                segment_start = float(ts)
            last_ts = float(ts)
        key = f"{event.get('kind')}:{event.get('call_id')}"
        if kind == EventType.CALL_STARTED:
            open_calls[key] = event
        elif kind == EventType.CALL_FINISHED:
            open_calls.pop(key, None)
            if event.get("kind") == "llm" and event.get("model") and not event.get("reused"):
                usage = usage + Usage.of_call(str(event["model"]),
                                              int(event.get("prompt_tokens") or 0),
                                              int(event.get("completion_tokens") or 0))
        elif kind == EventType.RUN_RESUMED:
            open_calls.clear()  # closed as interrupted right before it
        elif kind == EventType.APPROVAL_DECIDED:
            decided.add(str(event.get("call_id")))
    if segment_start is not None and last_ts is not None:
        duration_s += last_ts - segment_start
    interrupted = tuple(_interrupted(call, last_ts) for call in open_calls.values())
    first_seq = max((int(event["seq"]) + 1 for event in events), default=0)
    return Resumption(execution=execution, reason=reason, first_seq=first_seq, usage=usage,
                      duration_s=duration_s, interrupted=interrupted,
                      decided=frozenset(decided))


def _interrupted(call: dict[str, Any], last_ts: float | None) -> CallFinished:
    """The ``interrupted`` end of the stored start event ``call``, as its producer's class."""
    started = parse_payload(call)
    assert isinstance(started, CallStarted)
    ts = call.get("ts")
    ran = max(0.0, last_ts - float(ts)) if last_ts is not None and isinstance(ts, int | float) \
        else 0.0
    return started.closed("interrupted", "the process executing the call stopped; it runs "
                          "again", round(ran, 3))
