"""Pre-started sandbox processes, forked on demand from one preloaded parent (the zygote).

One :class:`WorkerPool` per host process (:func:`shared_pool`) starts lazily with the
first plan that runs with ``isolation="process"`` and stops at exit. A worker is reused
plan after plan; one that was killed, crashed or ran out of memory is replaced.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from pathlib import Path

from dcbrain.tfplan.sandbox._wire import Channel

#: Plans one worker runs before it is replaced (bounds what a long-lived process keeps).
PLANS_PER_WORKER = 500
_PROCESSORS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
#: Workers the pool holds before a plan that finds none idle waits (briefly) for one to
#: come free rather than have another forked: one per processor (at least two). Plans
#: are computed by the processors, and a busy worker whose plan waits on a long host call
#: is not counted as computing (:data:`HOST_WAIT_S`): more computing processes than
#: processors only hold memory. Idle workers kept after a burst of concurrent plans (per
#: memory limit): as many.
POOL_TARGET = max(2, _PROCESSORS)
MAX_IDLE = POOL_TARGET
#: Idle workers the pool keeps ready (per memory limit) for a plan that comes while the
#: others are busy; more are forked on demand, up to :data:`POOL_TARGET` at once.
IDLE_TARGET = 1
#: A worker whose plan has waited this long for one host call (a model's answer) is not
#: counted as computing: when every busy worker waits so, another is forked at once.
HOST_WAIT_S = 0.05
#: Longest a plan waits for a worker to come free while others compute.
FREE_WAIT_S = 1.0
#: How often such a wait looks again whether the busy workers still compute (one waiting
#: plan looks, for all of them: the others sleep until a worker comes free or it is
#: their turn to look).
_RECHECK_S = 0.01
#: Part of a worker's crash report the host keeps.
MAX_REPORT_BYTES = 1 << 20


class Worker:
    """One sandbox process, as the host sees it."""

    def __init__(self, pid: int, sock: socket.socket, report: int, memory: int) -> None:
        self.pid = pid
        self.channel = Channel(sock, trusted=False)
        self.report = report  # read end of the crash-report pipe (faulthandler output)
        self.memory = memory
        self.plans = 0
        #: since when its plan waits for a host call of its top level (``None``: it does not)
        self.in_host_since: float | None = None

    def read_report(self) -> str:
        """What the process wrote to its crash-report pipe since the last read (the first
        :data:`MAX_REPORT_BYTES` of it; the rest is dropped)."""
        chunks: list[bytes] = []
        kept = 0
        for _ in range(4 * MAX_REPORT_BYTES // 65536):  # a process writing on and on
            try:
                chunk = os.read(self.report, 65536)
            except OSError:  # BlockingIOError: nothing more for now
                break
            if not chunk:
                break
            if kept < MAX_REPORT_BYTES:
                chunks.append(chunk)
                kept += len(chunk)
        return b"".join(chunks)[:MAX_REPORT_BYTES].decode(errors="replace")

    def close(self) -> None:
        self.channel.close()
        with contextlib.suppress(OSError):
            os.close(self.report)


class WorkerPool:
    """Sandbox processes for plans: ``acquire`` one, ``release`` it, ``kill`` it.

    ``idle`` workers per memory limit are kept ready; more are forked when needed.
    """

    def __init__(self, idle: int = IDLE_TARGET) -> None:
        self.idle_target = idle
        self._lock = threading.Lock()
        self._idle: dict[int, deque[Worker]] = {}
        self._busy: dict[int, Worker] = {}
        self._coming: dict[int, int] = {}  # workers being forked for the idle list
        self._forking = 0  # workers being forked for a plan
        self._spawns: deque[Future[int]] = deque()
        self._exits: dict[int, int] = {}
        self._exited = threading.Condition(self._lock)
        self._freed = threading.Condition(self._lock)  # a worker went back to the idle list
        self._watcher: object | None = None  # the waiting plan that looks again in time
        self._latest_memory = 0  # the memory limit of the latest plan
        self._closed = False
        self._pid = os.getpid()
        self._discarded = 0
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._control = control
        self._control_lock = threading.Lock()
        self._zygote = subprocess.Popen(
            # -S: a worker needs the standard library and this package only, not the
            # site-packages' startup hooks (less memory in every worker)
            [sys.executable, "-S", "-c", _BOOTSTRAP, str(_PACKAGE_DIR), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=_zygote_environment(), close_fds=True,
        )
        theirs.close()
        self._reader = threading.Thread(target=self._read_zygote, name="tf_plan-sandbox",
                                        daemon=True)
        self._reader.start()

    # -- workers -----------------------------------------------------------------------
    def acquire(self, memory: int, patience: float | None = None) -> Worker:
        """An idle worker with address-space limit ``memory``, else a forked one.

        Once the pool holds :data:`POOL_TARGET` workers, a plan that finds none idle
        waits for one to come free instead (up to ``patience`` seconds, at most
        :data:`FREE_WAIT_S`, the default), unless every busy worker waits on a long host call
        (:data:`HOST_WAIT_S`): those compute nothing.
        """
        deadline: float | None = None
        evicted: list[Worker] = []
        me = object()
        with self._lock:
            while True:
                idle = self._idle.get(memory)
                if idle:
                    # the latest released: its caches and pages are the warmest
                    worker: Worker | None = idle.pop()
                    break
                worker = None
                if self._closed or self._size() < POOL_TARGET:
                    break
                evicted += self._evicted(memory, 1)
                if evicted:  # an idle worker of another memory limit made room
                    break
                now = time.monotonic()
                if deadline is None:
                    deadline = now + (FREE_WAIT_S if patience is None
                                      else min(patience, FREE_WAIT_S))
                if now >= deadline or not self._computing(now):
                    break
                if self._watcher is None:
                    self._watcher = me
                try:
                    self._freed.wait(min(deadline - now, _RECHECK_S) if self._watcher is me
                                     else deadline - now)
                except BaseException:
                    self._hand_over(me)
                    raise
            self._hand_over(me)
            if worker is not None:
                self._busy[worker.pid] = worker
            else:
                self._forking += 1
        self._latest_memory = memory
        self._kill_all(evicted)
        if worker is None:
            try:
                worker = self._spawn(memory)
            finally:
                with self._lock:
                    self._forking -= 1
            with self._lock:
                self._busy[worker.pid] = worker
        self._refill(memory)
        worker.read_report()  # drop what an earlier plan left there
        return worker

    def release(self, worker: Worker) -> None:
        """Give back a worker that finished its plan cleanly."""
        with self._lock:
            self._busy.pop(worker.pid, None)
        worker.plans += 1
        if worker.plans >= PLANS_PER_WORKER:
            self.discard(worker)
            return
        with self._lock:
            idle = self._idle.setdefault(worker.memory, deque())
            if not self._closed and len(idle) < max(self.idle_target, MAX_IDLE):
                idle.append(worker)
                self._freed.notify()
                return
        self.signal(worker, signal.SIGKILL)
        worker.close()

    def discard(self, worker: Worker) -> None:
        """Kill a worker that must not run another plan; a new one takes its place."""
        with self._lock:
            self._busy.pop(worker.pid, None)
            self._discarded += 1
        self.signal(worker, signal.SIGKILL)
        worker.close()
        self._refill(worker.memory)

    def signal(self, worker: Worker, signum: int) -> None:
        """Send ``signum`` to a worker that has not been reaped yet."""
        self._send(f"signal {worker.pid} {signum}".encode())

    def wait_exit(self, worker: Worker, timeout: float) -> int | None:
        """The wait status of a worker that ended, or ``None`` if it did not in time."""
        pid = worker.pid
        deadline = time.monotonic() + timeout
        with self._exited:
            while pid not in self._exits:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    return None
                self._exited.wait(remaining)
            return self._exits.pop(pid)

    def close(self) -> None:
        """Stop every worker and the zygote."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = [w for idle in self._idle.values() for w in idle]
            self._idle.clear()
            self._exited.notify_all()
            self._freed.notify_all()
        for worker in workers:
            worker.close()
        self._control.close()
        try:
            self._zygote.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._zygote.kill()

    def busy_pids(self) -> set[int]:
        """Process ids of the workers running a plan now."""
        with self._lock:
            return set(self._busy)

    def worker_pids(self) -> set[int]:
        """Process ids of every worker, idle or busy."""
        with self._lock:
            return set(self._busy) | {w.pid for idle in self._idle.values() for w in idle}

    def stats(self) -> dict[str, int]:
        """``size`` (workers, idle or busy), ``busy`` and ``restarts`` (workers killed
        and replaced since the pool started) — what the process's metrics show."""
        with self._lock:
            busy = len(self._busy)
            idle = sum(len(workers) for workers in self._idle.values())
            return {"size": busy + idle, "busy": busy, "restarts": self._discarded}

    @property
    def zygote_pid(self) -> int:
        return self._zygote.pid

    def idle_count(self, memory: int) -> int:
        """Workers with address-space limit ``memory`` ready for a plan."""
        with self._lock:
            return len(self._idle.get(memory, ()))

    @property
    def forked_here(self) -> bool:
        return os.getpid() == self._pid

    # -- internals ---------------------------------------------------------------------
    def _spawn(self, memory: int) -> Worker:
        host_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        report_r, report_w = os.pipe()
        os.set_blocking(report_r, False)
        future: Future[int] = Future()
        try:
            with self._control_lock:
                with self._lock:
                    if self._closed:
                        raise RuntimeError("the sandbox pool is closed")
                    self._spawns.append(future)
                socket.send_fds(self._control, [f"spawn {memory}".encode()],
                                [child_sock.fileno(), report_w])
        finally:
            child_sock.close()
            os.close(report_w)
        pid = future.result(timeout=30)
        return Worker(pid, host_sock, report_r, memory)

    def _hand_over(self, waiter: object) -> None:
        """``waiter`` stops waiting (the lock held): if it was the one looking again in
        time, another waiting plan looks from now on."""
        if self._watcher is waiter:
            self._watcher = None
            self._freed.notify()

    def _computing(self, now: float) -> int:
        """Workers that will come free soon (the lock held): busy ones not waiting on a
        long host call, and those being forked (for the idle list or for a plan)."""
        return sum(1 for worker in self._busy.values()
                   if (since := worker.in_host_since) is None or now - since < HOST_WAIT_S
                   ) + self._forking + sum(self._coming.values())

    def _evicted(self, memory: int, count: int) -> list[Worker]:
        """Up to ``count`` idle workers of memory limits other than ``memory``, taken out of
        the pool to make room (the lock held): idle workers of a limit no plan uses now
        must not keep the pool from workers of the limit plans do use."""
        taken: list[Worker] = []
        for limit, idle in self._idle.items():
            while idle and limit != memory and len(taken) < count:
                taken.append(idle.popleft())
        return taken

    def _kill_all(self, workers: list[Worker]) -> None:
        for worker in workers:
            self.signal(worker, signal.SIGKILL)
            worker.close()

    def _size(self) -> int:
        """Workers busy, idle or being forked (the lock held)."""
        return (len(self._busy) + sum(len(idle) for idle in self._idle.values())
                + sum(self._coming.values()) + self._forking)

    def _refill(self, memory: int) -> None:
        """Fork workers in the background until ``idle_target`` are idle (or on their way),
        as long as the pool holds fewer than :data:`POOL_TARGET` (idle workers of other
        memory limits make room)."""
        with self._lock:
            coming = self._coming.get(memory, 0)
            wanted = self.idle_target - len(self._idle.get(memory, ())) - coming
            evicted = self._evicted(memory, wanted - (POOL_TARGET - self._size()))
            missing = min(wanted, POOL_TARGET - self._size())
            if missing <= 0 or self._closed:
                missing = 0
            else:
                self._coming[memory] = coming + missing
        self._kill_all(evicted)
        if missing == 0:
            return
        threading.Thread(target=self._add_idle, args=(memory, missing), daemon=True,
                         name="tf_plan-sandbox-refill").start()

    def _add_idle(self, memory: int, count: int) -> None:
        for done in range(count):
            try:
                worker: Worker | None = self._spawn(memory)
            except (RuntimeError, OSError, TimeoutError):
                worker = None
            with self._lock:
                self._coming[memory] -= 1
                if worker is not None and not self._closed:
                    self._idle.setdefault(memory, deque()).append(worker)
                    self._freed.notify()
                    worker = None
            if worker is not None:  # the pool closed meanwhile
                worker.close()
            if self._closed:
                with self._lock:
                    self._coming[memory] -= count - done - 1
                return
        latest = self._latest_memory
        if latest != memory:  # it found no room while these were on their way: now it may
            self._refill(latest)

    def _send(self, data: bytes) -> None:
        with self._control_lock, contextlib.suppress(OSError):
            self._control.send(data)

    def _read_zygote(self) -> None:
        while True:
            try:
                data = self._control.recv(256)
            except OSError:
                data = b""
            if not data:
                with self._lock:
                    self._closed = True
                    pending = list(self._spawns)
                    self._spawns.clear()
                    self._exited.notify_all()
                    self._freed.notify_all()
                for future in pending:
                    future.set_exception(RuntimeError("the sandbox zygote stopped"))
                return
            words = data.decode().split()
            with self._lock:
                if words[0] == "spawned":
                    self._spawns.popleft().set_result(int(words[1]))
                elif words[0] == "exited":
                    self._exits[int(words[1])] = int(words[2])
                    if len(self._exits) > 1024:  # statuses nobody waited for
                        del self._exits[next(iter(self._exits))]
                    self._exited.notify_all()


#: The ``dcbrain`` package directory this host runs.
_PACKAGE_DIR = Path(__file__).resolve().parents[2]

#: Starts the zygote with only the interpreter loaded: the package's ``__init__`` (which
#: imports the whole library) is replaced by an empty package of the same directory. A
#: worker opens no connection and hashes with the standard library's own code (BLAKE2 is
#: always that): OpenSSL is not loaded (5 MB less in the zygote, 1.3 MB in every worker).
_BOOTSTRAP = """\
import sys, types
sys.modules["ssl"] = sys.modules["_ssl"] = sys.modules["_hashlib"] = None
package = types.ModuleType("dcbrain")
package.__path__ = [sys.argv[1]]
sys.modules["dcbrain"] = package
from dcbrain.tfplan.sandbox._zygote import main
main(int(sys.argv[2]))
"""


def _zygote_environment() -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(_PACKAGE_DIR.parent)
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    env["MALLOC_ARENA_MAX"] = "2"  # each arena reserves address space counted by RLIMIT_AS
    # one seed for every pool: a set of strings iterates in the same order after a restart
    env["PYTHONHASHSEED"] = "0"
    return env


_shared: WorkerPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> WorkerPool:
    """The pool of this process, started on first use and stopped at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.forked_here or _shared._closed:
            _shared = WorkerPool()
        return _shared


def current_pool() -> WorkerPool | None:
    """The pool of this process if one was started (none is started here)."""
    pool = _shared
    return pool if pool is not None and pool.forked_here and not pool._closed else None


def _close_shared() -> None:
    if _shared is not None and _shared.forked_here:
        _shared.close()


atexit.register(_close_shared)
