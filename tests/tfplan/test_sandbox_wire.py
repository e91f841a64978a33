"""The sandbox wire when a receiver polls before it sleeps: framing edge cases."""

from __future__ import annotations

import pickle
import socket
import struct
import threading
from typing import Any

import pytest

from dcbrain.tfplan.errors import MessageTooLarge
from dcbrain.tfplan.sandbox._wire import Channel, ChannelClosed

SPIN_S = 50e-6
PATIENCE_S = 20.0


def _pair() -> tuple[Channel, Channel, socket.socket]:
    ours, theirs = socket.socketpair()
    return Channel(ours, trusted=False), Channel(theirs, trusted=True), theirs


def _frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=5)
    return struct.pack("!I", len(data)) + data


def test_a_message_already_there_is_taken_by_the_poll() -> None:
    host, worker, _ = _pair()
    worker.send(("call", 1, "echo", {"line": 1}, [], {"x": 1}, 0))
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("call", 1, "echo", {"line": 1}, [],
                                                      {"x": 1}, 0)
    host.close()
    worker.close()


def test_a_message_that_comes_after_the_poll_is_still_received() -> None:
    host, worker, _ = _pair()
    polled = threading.Event()
    real_spin = host._spin

    def spin(spin_s: float) -> int | None:
        size = real_spin(spin_s)
        polled.set()
        return size

    host._spin = spin  # type: ignore[method-assign]
    sender = threading.Thread(target=lambda: (polled.wait(PATIENCE_S), worker.send(("late",))))
    sender.start()
    assert host.recv(None, spin_s=SPIN_S) == ("late",)  # the poll missed; the wait did not
    sender.join(PATIENCE_S)
    host.close()
    worker.close()


def test_a_message_split_at_every_byte_is_joined_while_polling() -> None:
    host, _, theirs = _pair()
    frame = _frame(("reply", 3, "ok", {"k": [1, 2, 3], "s": "é" * 100}))
    for byte in frame[:-1]:
        theirs.sendall(bytes([byte]))
        with pytest.raises(TimeoutError):  # incomplete: nothing is returned yet
            host.recv(0.001, spin_s=SPIN_S)
    theirs.sendall(frame[-1:])
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("reply", 3, "ok",
                                                      {"k": [1, 2, 3], "s": "é" * 100})
    host.close()
    theirs.close()


def test_two_messages_in_one_read_come_out_in_order() -> None:
    host, _, theirs = _pair()
    theirs.sendall(_frame(("a", 1)) + _frame(("b", 2)) + _frame(("c", 3))[:5])
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("a", 1)
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("b", 2)
    with pytest.raises(TimeoutError):
        host.recv(0.001, spin_s=SPIN_S)
    theirs.sendall(_frame(("c", 3))[5:])
    assert host.recv(PATIENCE_S) == ("c", 3)
    host.close()
    theirs.close()


@pytest.mark.parametrize("sent", [b"", _frame(("reply", 1, "ok", "x" * 1000))[:100]],
                         ids=["while-polled", "mid-message"])
def test_a_peer_that_closes_is_a_closed_channel(sent: bytes) -> None:
    host, worker, theirs = _pair()
    theirs.sendall(sent)
    theirs.close()
    worker.close()
    with pytest.raises(ChannelClosed):
        host.recv(PATIENCE_S, spin_s=SPIN_S)
    host.close()


def test_a_polled_header_past_the_limit_is_refused_before_its_body() -> None:
    host, _, theirs = _pair()
    host.max_message = 1000
    theirs.sendall(struct.pack("!I", 1001))  # the body never comes: refused from the header
    with pytest.raises(MessageTooLarge):
        host.recv(PATIENCE_S, spin_s=SPIN_S)
    host.close()
    theirs.close()


def test_a_message_of_exactly_the_limit_is_accepted() -> None:
    host, _, theirs = _pair()
    frame = _frame("x" * 500)
    host.max_message = len(frame) - 4
    theirs.sendall(frame)
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == "x" * 500
    host.close()
    theirs.close()


def test_a_polled_message_naming_a_class_closes_the_untrusted_end() -> None:
    host, _, theirs = _pair()
    theirs.sendall(_frame(("reply", 1, "ok", threading.Lock)))
    with pytest.raises(ChannelClosed, match="not allowed"):
        host.recv(PATIENCE_S, spin_s=SPIN_S)
    host.close()
    theirs.close()


def test_polling_stops_while_recent_waits_were_long_and_resumes_when_short() -> None:
    host, worker, _ = _pair()
    polls: list[float] = []
    real_spin = host._spin

    def spin(spin_s: float) -> int | None:
        polls.append(spin_s)
        return real_spin(spin_s)

    host._spin = spin  # type: ignore[method-assign]
    host._recent_wait = 1.0  # the peer took a second to answer lately
    worker.send(("a",))
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("a",)
    assert polls == []  # slept on the socket at once
    host._recent_wait = 0.0
    worker.send(("b",))
    assert host.recv(PATIENCE_S, spin_s=SPIN_S) == ("b",)
    assert polls == [SPIN_S]
    host.close()
    worker.close()


def test_without_a_spin_the_channel_never_polls() -> None:
    host, worker, _ = _pair()
    host._spin = lambda spin_s: pytest.fail("polled")  # type: ignore[method-assign]
    worker.send(("a",))
    assert host.recv(PATIENCE_S) == ("a",)
    with pytest.raises(TimeoutError):
        host.recv(0.001)
    host.close()
    worker.close()
