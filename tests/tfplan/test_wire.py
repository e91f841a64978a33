"""The sandbox wire: framed messages, bounded waits that lose nothing."""

from __future__ import annotations

import socket
import threading

import pytest

from dcbrain.tfplan.sandbox._wire import Channel, ChannelClosed


def test_a_timed_out_wait_loses_nothing_and_an_untimed_wait_waits_for_good() -> None:
    ours, theirs = socket.socketpair()
    host, worker = Channel(ours, trusted=False), Channel(theirs, trusted=True)
    with pytest.raises(TimeoutError):
        host.recv(0.01)
    worker.send(("call", 1, "echo", {"line": 2}, [1], {}, 0))
    assert host.recv(0.01) == ("call", 1, "echo", {"line": 2}, [1], {}, 0)
    with pytest.raises(TimeoutError):  # the bound is set again for every timed wait
        host.recv(0.01)
    sent = threading.Event()

    def later() -> None:
        sent.wait()
        worker.send(("done", {"value": 3}))

    sender = threading.Thread(target=later)
    sender.start()
    sent.set()
    assert host.recv() == ("done", {"value": 3})
    sender.join()
    # the untimed wait left no bound on the socket's reads
    assert ours.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16) == bytes(16)
    worker.close()
    with pytest.raises(ChannelClosed):
        host.recv(1.0)
    host.close()


def test_a_message_split_across_reads_is_joined() -> None:
    ours, theirs = socket.socketpair()
    host = Channel(ours, trusted=False)
    payload = ("reply", 7, "ok", "x" * 200_000)  # larger than one read of the channel
    writer = threading.Thread(target=Channel(theirs, trusted=True).send, args=(payload,))
    writer.start()
    assert host.recv(5.0) == payload
    writer.join()
    host.close()
    theirs.close()
