"""Messages between the host and a sandbox process: length-prefixed pickles on a socket.

The host reads what a sandbox process writes with an unpickler that refuses every
global but the plan value types (Decimal, date, datetime, time, timedelta, a fixed
zone), so a message can only hold plan data (no code runs while it is read);
the host still checks every value that reaches a chain, a tool or the caller.
"""

from __future__ import annotations

import datetime
import decimal
import io
import os
import pickle
import select
import socket
import struct
import threading
import time
from dataclasses import fields
from typing import Any

from dcbrain.tfplan.errors import ChannelClosed as ChannelClosed
from dcbrain.tfplan.errors import MessageTooLarge
from dcbrain.tfplan.result import CallRecord

#: Fields of a call's record that the worker fills in and sends (position, branch …);
#: the host fills in the rest (arguments after its own copy, result, error, timing).
WORKER_RECORD_FIELDS = tuple(
    spec.name for spec in fields(CallRecord)
    if spec.name not in ("args", "kwargs", "result", "error", "started_at", "duration_s",
                         "extra")
)

_HEADER = struct.Struct("!I")
#: ``struct timeval`` as ``SO_RCVTIMEO`` takes it (seconds, microseconds)
_TIMEVAL = struct.Struct("@ll")

#: Largest message accepted (a plan's result of ``max_size`` elements pickles far smaller);
#: the host's end of a run's channel accepts less (:attr:`Channel.max_message`).
MAX_MESSAGE_BYTES = 2**28



#: The only classes a message may name: the plan values that are not built-in types.
#: Each is made from its own text or bytes, checked by its constructor (no code of the
#: sender's choosing runs); the host checks the values again, as it does every value.
PLAN_VALUE_CLASSES: dict[tuple[str, str], type] = {
    ("decimal", "Decimal"): decimal.Decimal,
    ("datetime", "date"): datetime.date,
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "time"): datetime.time,
    ("datetime", "timedelta"): datetime.timedelta,
    ("datetime", "timezone"): datetime.timezone,
}


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = PLAN_VALUE_CLASSES.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")
        return found


def plain_loads(data: bytes) -> Any:
    """Unpickle ``data`` holding only built-in values and plan values
    (:data:`PLAN_VALUE_CLASSES`); no other class is ever looked up."""
    return _PlainUnpickler(io.BytesIO(data)).load()


class Channel:
    """Framed messages on a connected stream socket; ``send`` may be called from any thread."""

    def __init__(self, sock: socket.socket, *, trusted: bool) -> None:
        self.sock = sock
        self._loads = pickle.loads if trusted else plain_loads
        self._buffer = bytearray()
        self._chunk = memoryview(bytearray(1 << 16))  # reused: a fresh big bytes per read costs
        self._send_lock = threading.Lock()
        #: the receive timeout set on the socket itself (``SO_RCVTIMEO``; 0: none), or
        #: ``None`` where the option cannot be set: then each wait polls first
        self._recv_timeout: float | None = 0.0
        self._poller: select.poll | None = None
        #: longest message :meth:`recv` accepts
        self.max_message = MAX_MESSAGE_BYTES
        self._recent_wait = 0.0  # moving average of the waits for a message, in seconds

    def send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=5)
        with self._send_lock:
            try:
                self.sock.sendall(_HEADER.pack(len(data)) + data)
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None

    def recv(self, timeout: float | None = None, *, spin_s: float = 0.0) -> Any:
        """The next message; raises ``TimeoutError`` when none came within ``timeout``.

        ``spin_s``: how long to poll the socket without sleeping before waiting on it
        (an answer expected within microseconds then arrives without the cost of waking
        this process up; each poll yields the processor to any other runnable task).
        It polls only while the recent waits of this channel were short (their moving
        average below three times ``spin_s``, its own waking up included): where the peer
        takes longer, polling only costs.

        The socket itself stays blocking (a timeout on the socket object would also cut
        short a ``send`` of another thread, losing part of a message); a wait is bounded
        by the socket's receive timeout (``SO_RCVTIMEO``, which only receives obey), so
        waiting for the next message costs one system call, not a poll and a read.
        """
        buffer = self._buffer
        waited_from = 0.0
        while True:
            if len(buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buffer)
                if size > self.max_message:
                    raise MessageTooLarge(size, self.max_message)
                end = _HEADER.size + size
                if len(buffer) >= end:
                    data = bytes(buffer[_HEADER.size:end])
                    del buffer[:end]
                    try:
                        return self._loads(data)
                    except Exception as exc:  # malformed message: the peer is not trusted
                        raise ChannelClosed(f"unreadable message: {exc}") from None
            size = None
            if spin_s > 0:
                if waited_from == 0.0:
                    waited_from = time.perf_counter()
                if self._recent_wait < 3 * spin_s:
                    size = self._spin(spin_s)
            if size is None:
                if not self._wait_set(timeout):
                    raise TimeoutError
                try:
                    size = self.sock.recv_into(self._chunk)
                except BlockingIOError:  # the receive timeout passed with nothing to read
                    raise TimeoutError from None
                except OSError as exc:
                    raise ChannelClosed(str(exc)) from None
            if not size:
                raise ChannelClosed("connection closed")
            buffer += self._chunk[:size]
            if waited_from:
                waited = time.perf_counter() - waited_from
                self._recent_wait += (waited - self._recent_wait) / 4
                waited_from = 0.0

    def _spin(self, spin_s: float) -> int | None:
        """Bytes read into the chunk by polling for up to ``spin_s`` seconds (0: the peer
        closed the socket; ``None``: nothing came meanwhile)."""
        until = time.perf_counter() + spin_s
        sock, chunk = self.sock, self._chunk
        while True:
            try:
                return sock.recv_into(chunk, 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                pass
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            if time.perf_counter() >= until:
                return None
            os.sched_yield()

    def _wait_set(self, timeout: float | None) -> bool:
        """Bound the next read by ``timeout`` (``None``: wait for good); ``False`` when
        the socket cannot carry the bound and nothing came within ``timeout``."""
        wanted = 0.0 if timeout is None else max(timeout, 1e-6)
        if self._recv_timeout is not None:
            if self._recv_timeout == wanted:
                return True
            seconds = int(wanted)
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _TIMEVAL.pack(
                    seconds, int((wanted - seconds) * 1e6)))
            except (OSError, AttributeError):
                self._recv_timeout = None  # not supported here: poll before each read
            else:
                self._recv_timeout = wanted
                return True
        return timeout is None or self._readable(timeout)

    def _readable(self, timeout: float) -> bool:
        """Whether the socket has data (or an ending) within ``timeout`` seconds; ``poll``
        works for any descriptor number, ``select`` only below 1024."""
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self.sock, select.POLLIN)
        return bool(self._poller.poll(timeout * 1000))

    def close(self) -> None:
        self.sock.close()
