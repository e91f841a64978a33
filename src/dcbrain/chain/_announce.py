"""When a plan's call is announced to the caller's observer, and as what kind of call."""

from __future__ import annotations

import threading

from dcbrain.tfplan import CallObserver, CallRecord


class CallAnnouncer:
    """Passes a plan's calls on to ``observer`` once the chain layer has entered them.

    The interpreter reports a call just before invoking it, in the same thread. Holding
    the report until the callable runs puts the new-input safe point before the
    announcement, and lets the call carry its kind in ``record.extra["kind"]``: a chain
    built by ``__construct_chain`` is a chain, whatever the plan named it. A call refused
    at the safe point is never announced, so its end is not reported either.
    """

    def __init__(self, observer: CallObserver) -> None:
        self._observer = observer
        self._reported = threading.local()

    def on_call_start(self, record: CallRecord) -> None:
        self._reported.record = record

    def announce(self, kind: str, *, reused: bool = False, path: str = "") -> CallRecord | None:
        """Announce the call this thread is entering as a call of ``kind``; its record.

        ``reused``: the run journal answers it with a recorded result; ``path``: its
        ``parallel`` branch path.
        """
        record: CallRecord | None = getattr(self._reported, "record", None)
        if record is None:
            return None
        self._reported.record = None
        record.extra["kind"] = kind
        record.extra["reused"] = reused
        record.extra["path"] = path
        self._observer.on_call_start(record)
        return record

    def retried(self, record: CallRecord, attempt: int, attempts: int, error: BaseException,
                delay_s: float) -> None:
        """Tell an observer that listens (``on_call_retry``) that try ``attempt`` of the
        call ``record`` failed with ``error`` and is retried after ``delay_s``."""
        listener = getattr(self._observer, "on_call_retry", None)
        if listener is not None:
            listener(record, attempt=attempt, attempts=attempts,
                     error=f"{type(error).__name__}: {error}", delay_s=delay_s)

    def on_call_end(self, record: CallRecord) -> None:
        if getattr(self._reported, "record", None) is record:
            self._reported.record = None
        if "kind" in record.extra:
            self._observer.on_call_end(record)
