"""uvicorn's h11 protocol within :class:`~dcbrain.server.connections.ConnectionLimits`."""

from __future__ import annotations

import asyncio
import ipaddress
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from dcbrain.server.connections import ConnectionLimits

_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\ncontent-length: 20\r\n\r\ntoo many connections")


# The connections of each server that wait for a request head, longest-waiting first.
_waiting: weakref.WeakKeyDictionary[ServerState, dict[GuardedH11Protocol, None]] = (
    weakref.WeakKeyDictionary())


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap of :class:`ConnectionLimits`
    (set on a subclass by :func:`guarded_protocol`)."""

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: object = None  # h11.IDLE: awaiting a head; h11.SEND_BODY: a body
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting = _waiting.setdefault(self.server_state, {})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        crowded = len(self.connections) >= self.limits.max_connections
        super().connection_made(transport)
        if crowded:
            if not self._waiting:
                self.transport.write(_REFUSED)
                self.transport.close()
                return
            next(iter(self._waiting))._close()
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._set_deadline(None)
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Move the deadline along with the request: its head, its body, then none."""
        state = self.conn.their_state
        if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
            self._set_deadline(None)
        elif state is not self._phase:
            self._set_deadline(state)

    def _set_deadline(self, phase: object) -> None:
        self._waiting.pop(self, None)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = phase
        if phase is h11.IDLE:
            self._waiting[self] = None
            self._deadline = self.loop.call_later(self.limits.head_timeout_s, self._expire)
        elif phase is h11.SEND_BODY:
            self._deadline = self.loop.call_later(self.limits.body_timeout_s, self._expire)

    def _expire(self) -> None:
        if self.conn.their_state is self._phase:  # the head or the body is still not here
            self._close()

    def _close(self) -> None:
        self._set_deadline(None)
        if not self.transport.is_closing():
            self.transport.close()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` class that applies ``limits``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})


def uvicorn_config(app: ASGIApp | Callable[..., Any], limits: ConnectionLimits, *,
                   forwarded_allow_ips: str | None = None, **options: Any) -> uvicorn.Config:
    """A uvicorn configuration serving ``app`` within ``limits`` (``options`` as for
    :class:`uvicorn.Config`).

    A client is the socket's peer: ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are read
    only from the proxies ``forwarded_allow_ips`` lists (see :func:`trusted_proxies`).
    """
    return uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        # uvicorn trusts these headers from loopback by default: any local client could
        # then claim any address, and the caps per client would count nothing.
        proxy_headers=forwarded_allow_ips is not None,
        forwarded_allow_ips=trusted_proxies(forwarded_allow_ips) or None,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        backlog=limits.backlog,
        # Idle keep-alive connections close at the head deadline, or uvicorn's 5 s.
        timeout_keep_alive=5,
        **options,
    )


def trusted_proxies(value: str | None) -> str:
    """``--forwarded-allow-ips`` checked: comma-separated IP addresses and networks (CIDR),
    or ``*`` for any peer (uvicorn's semantics); ``""`` for none.

    Raises ``ValueError`` naming the entry that is neither.
    """
    if value is None:
        return ""
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    if not entries:
        raise ValueError("--forwarded-allow-ips is empty: list the proxies' addresses "
                         "(e.g. 10.0.0.5,10.1.0.0/16) or * for any")
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"--forwarded-allow-ips: {entry!r} is not an IP address, a "
                             "network such as 10.0.0.0/8, or *") from None
    return ",".join(entries)
