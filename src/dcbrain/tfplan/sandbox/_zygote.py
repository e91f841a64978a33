"""The preloaded parent of sandbox processes (started by ``pool.py`` with ``main(FD)``).

It imports the interpreter once, then forks one sandbox process per request, so a new
process costs a fork rather than an interpreter start. Requests arrive on the
``SOCK_SEQPACKET`` socket ``FD`` from the host, one per message:

- ``spawn MEMORY_BYTES`` with two file descriptors attached (the process's message
  socket and the write end of its crash-report pipe); answered ``spawned PID``;
- ``signal PID SIGNUM``: signal a live child (never a reaped pid).

Every child that ends is reported as ``exited PID STATUS``. When the host goes away the
zygote kills its children and exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import resource
import select
import signal
import socket

from dcbrain.tfplan.sandbox import _worker

_PR_SET_PDEATHSIG = 1


def main(control_fd: int) -> None:
    control = socket.socket(fileno=control_fd)
    gc.freeze()  # keep the preloaded heap shared with the children (copy-on-write)
    with contextlib.suppress(OSError, AttributeError):  # glibc: give back what importing freed
        ctypes.CDLL(None).malloc_trim(0)  # (every child would otherwise start with it)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([control, wake_r], [], [])
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
            _reap(control, children)
            if control not in ready:
                continue
            data, fds, _, _ = socket.recv_fds(control, 256, 2)
            if not data:
                return
            words = data.decode().split()
            if words[0] == "spawn" and len(fds) == 2:
                pid = os.fork()
                if pid == 0:
                    _child(control, (wake_r, wake_w), fds, int(words[1]))
                children.add(pid)
                control.send(f"spawned {pid}".encode())
            elif words[0] == "signal" and int(words[1]) in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(words[1]), int(words[2]))
            for fd in fds:
                os.close(fd)
    except (ConnectionError, OSError):
        pass
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _reap(control: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        control.send(f"exited {pid} {status}".encode())


def _child(control: socket.socket, wake: tuple[int, int], fds: list[int], memory: int) -> None:
    """In the forked child: keep only its own descriptors, apply the limits, serve plans."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        control.close()
        for fd in wake:
            os.close(fd)
        sock_fd, report_fd = fds
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(report_fd, 2)
        os.dup2(sock_fd, 3)
        os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        _worker.prepare()
        _apply_limits(memory)
        _worker.serve(socket.socket(fileno=3))
    finally:
        os._exit(0)


def _apply_limits(memory: int) -> None:
    """OS limits of a sandbox process: no core files, no files at all, bounded memory."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, highest + 1))  # none opens again
    inherited = resource.getrlimit(resource.RLIMIT_AS)[1]
    if inherited != resource.RLIM_INFINITY:
        memory = min(memory, inherited)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

