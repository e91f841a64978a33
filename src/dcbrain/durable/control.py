"""Control messages from API nodes to the worker that runs a run: abort and supersede.

On PostgreSQL a message is a ``NOTIFY dcbrain_control`` with a JSON payload; every worker
LISTENs on one connection and acts on the runs it executes (the others ignore it). In one
process (SQLite) a message is handed to the handler directly.

The same connection LISTENs on ``dcbrain_queue``, which says that a run was queued, handed
back or ended: the worker looks at the queue at once (``on_queue``), and once more a moment
later, in case the first wake-up found DBOS in the middle of a look.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from dcbrain.durable._pg import CONNECT_TIMEOUT_S
from dcbrain.durable._urls import pg_dsn
from dcbrain.exceptions import DatabaseUnavailable

logger = logging.getLogger("dcbrain.durable")

CONTROL_CHANNEL: Final = "dcbrain_control"
#: Channel whose notifications mean: look at the queue now.
QUEUE_CHANNEL: Final = "dcbrain_queue"
#: How often the listening thread checks whether it should stop (seconds).
_TICK_S: Final = 1.0
#: Seconds after a queue notification when the queue is looked at a second time.
_AGAIN_S: Final = 0.1

ControlHandler = Callable[[dict[str, Any]], None]


class ControlChannel:
    """Sends control messages; with a ``handler``, also receives them (a worker)."""

    def __init__(self, url: str | None, handler: ControlHandler | None = None, *,
                 on_queue: Callable[[], None] | None = None) -> None:
        self.url = url
        self.handler = handler
        self.on_queue = on_queue
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        if self.url is None or self.handler is None:
            return
        self._thread = threading.Thread(target=self._listen, args=(self.url,),
                                        name="dcbrain-control", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def send(self, message: dict[str, Any]) -> None:
        """Deliver ``message`` (``{"op": ..., "run_id": ...}``) to whichever worker runs it."""
        if self.url is None:
            if self.handler is not None:
                self.handler(message)
            return
        import psycopg

        try:
            with psycopg.connect(pg_dsn(self.url), autocommit=True,
                                 connect_timeout=CONNECT_TIMEOUT_S) as conn:
                conn.execute("SELECT pg_notify(%s, %s)",
                             (CONTROL_CHANNEL, json.dumps(message)))
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"a control message could not be sent: {exc}") from exc

    def _listen(self, url: str) -> None:
        import psycopg

        assert self.handler is not None
        while not self._stop.is_set():
            try:
                with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
                    conn.execute(f"LISTEN {CONTROL_CHANNEL}")
                    conn.execute(f"LISTEN {QUEUE_CHANNEL}")
                    self._ready.set()
                    again = False  # a second look at the queue is due
                    while not self._stop.is_set():
                        woken = False
                        for note in conn.notifies(timeout=_AGAIN_S if again else _TICK_S,
                                                  stop_after=64 if again else 1):
                            if note.channel != QUEUE_CHANNEL:
                                self._dispatch(note.payload)
                            elif not woken:
                                self._wake()
                                woken = True
                        if again and not woken:
                            self._wake()
                        again = woken
            except psycopg.Error:
                logger.warning("control listener lost its connection; reconnecting",
                               exc_info=True)
                self._ready.set()
                self._stop.wait(1.0)

    def _wake(self) -> None:
        if self.on_queue is None:
            return
        try:
            self.on_queue()
        except Exception:
            logger.exception("waking the queue failed")

    def _dispatch(self, payload: str) -> None:
        assert self.handler is not None
        try:
            message = json.loads(payload)
        except ValueError:
            logger.warning("ignoring a control message that is not JSON: %.200r", payload)
            return
        if not isinstance(message, dict):
            return
        try:
            self.handler(message)
        except Exception:
            logger.exception("control message %.200r failed", payload)
