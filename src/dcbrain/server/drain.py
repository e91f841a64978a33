"""Draining a server before it stops: no new runs, the runs in flight finish, readers are told.

On SIGTERM (or Ctrl-C) :class:`DrainingServer` keeps listening while it drains: new
messages are answered ``503`` with ``Retry-After``, the runs this process executes get up
to the drain timeout to finish, and event streams go on, so their readers get each run's
``final`` event and ``end``. Then the runs still in flight are given up — an in-process run
ends ``interrupted`` (reason ``server_shutdown``) and its readers are told so; a durable
run stays pending for a restarted or another worker to resume — and uvicorn's own
shutdown follows. A second signal ends the wait at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from types import FrameType
from typing import Final

import uvicorn

from dcbrain.server.connections import DEFAULT_DRAIN_TIMEOUT_S
from dcbrain.server.service import RunService
from dcbrain.server.sse import StreamSlots

logger = logging.getLogger("dcbrain.server")

#: Seconds readers get, after the drain, to receive the end of runs given up then.
STREAM_GRACE_S: Final = 2.0
#: Seconds uvicorn's own shutdown waits for connections once the drain is over.
SHUTDOWN_GRACE_S: Final = 3
_POLL_S: Final = 0.05


class Drain:
    """Whether the server still takes runs, and the wait for the ones it has."""

    def __init__(self, runs: RunService, streams: StreamSlots) -> None:
        self.runs = runs
        self.streams = streams
        self.draining = False

    async def run(self, timeout_s: float, hurry: asyncio.Event | None = None) -> list[str]:
        """Stop taking runs, wait up to ``timeout_s`` for those in flight (and, after them,
        for open event streams), then give up the rest; returns the ids given up."""
        hurry = hurry if hurry is not None else asyncio.Event()
        self.draining = True
        await self.runs.stop_taking_runs()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        logger.warning("draining: new runs are refused; %d run(s) in flight and %d event "
                       "stream(s) get up to %g s", self.runs.in_flight,
                       self.streams.open_count, timeout_s)
        await _until(lambda: self.runs.in_flight == 0, deadline, hurry)
        given_up = await self.runs.release_in_flight()
        if given_up:
            logger.warning("drain timeout: %d run(s) given up (%s)", len(given_up),
                           ", ".join(given_up))
        # Readers of the runs that ended get their last events; on an API node (runs
        # execute on workers) they get what is left of the timeout.
        grace = max(deadline - loop.time(), STREAM_GRACE_S if given_up else 0.0)
        await _until(lambda: self.streams.open_count == 0, loop.time() + grace, hurry)
        if self.streams.open_count:
            logger.warning("closing %d event stream(s) of runs that did not end",
                           self.streams.open_count)
        return given_up


async def _until(done: Callable[[], bool], deadline: float, hurry: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not done() and not hurry.is_set() and loop.time() < deadline:
        await asyncio.sleep(_POLL_S)


class DrainingServer(uvicorn.Server):
    """uvicorn's server, drained (see :class:`Drain`) before its own graceful shutdown."""

    def __init__(self, config: uvicorn.Config, drain: Drain, timeout_s: float) -> None:
        super().__init__(config)
        self.drain = drain
        self.timeout_s = timeout_s
        self._signals: list[int] = []
        self._task: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._drained = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler: it only notes the signal; the loop starts the drain (on_tick).
        if self._drained or self.should_exit:
            super().handle_exit(sig, frame)
            return
        self._signals.append(sig)

    async def on_tick(self, counter: int) -> bool:
        if self._signals and self._task is None:
            self._task = asyncio.create_task(self._drain(), name="dcbrain-drain")
        elif len(self._signals) > 1:
            self._hurry.set()
        return await super().on_tick(counter)

    async def _drain(self) -> None:
        try:
            await self.drain.run(self.timeout_s, self._hurry)
        except Exception:
            logger.exception("draining failed; shutting down now")
        finally:
            self._drained = True
            # uvicorn's own handling of the first signal: its shutdown (streams still open
            # are closed) and, afterwards, the exit status that signal asks for.
            super().handle_exit(self._signals[0], None)


__all__ = ["DEFAULT_DRAIN_TIMEOUT_S", "Drain", "DrainingServer"]
