"""A small pool of PostgreSQL connections shared by the threads of one process.

An outage (a restart, a failover, a lost network) is met here, for every store of the
process: a connection the server closed is never handed out again, and opening one waits
for the database up to ``outage_wait_s`` (a worker's runs wait the outage out; an API node
answers ``503`` at once). What still fails is raised as :class:`DatabaseUnavailable`.
"""

from __future__ import annotations

import logging
import queue
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from dcbrain.durable._urls import pg_dsn
from dcbrain.exceptions import DatabaseUnavailable

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger("dcbrain.durable")

#: Seconds a connection attempt may take before the database counts as unreachable.
CONNECT_TIMEOUT_S: Final = 5
#: Seconds between the lines a process waiting for its database at start logs.
WAIT_LOG_EVERY_S: Final = 5.0
#: Pause between attempts to reach a database that is down (doubling up to the second).
_FIRST_PAUSE_S: Final = 0.1
_LONGEST_PAUSE_S: Final = 1.0


class Connections:
    """At most ``max_connections`` autocommit connections to ``url``, opened on demand."""

    def __init__(self, url: str, *, max_connections: int = 8,
                 outage_wait_s: float = 0.0) -> None:
        import psycopg

        self.dsn = pg_dsn(url)
        self.outage_wait_s = outage_wait_s
        self._psycopg = psycopg
        self._idle: queue.LifoQueue[psycopg.Connection[Any]] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Lock()
        self._closed = False

    @property
    def where(self) -> str:
        """Host, port and database, without the credentials."""
        return self.dsn.rsplit("@", 1)[-1]

    @contextmanager
    def use(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for this thread until the block ends (a broken one is not reused).

        Raises :class:`DatabaseUnavailable` when the database cannot be reached, or the
        connection broke in the block.
        """
        self._slots.acquire()
        try:
            conn = self._checkout()
            try:
                yield conn
            except self._psycopg.OperationalError as exc:
                conn.close()  # broken: the next use opens a new one
                if conn.broken or _is_outage(exc):
                    raise DatabaseUnavailable(
                        f"the database {self.where} is unavailable: {exc}") from exc
                raise
            with self._lock:
                if self._closed:  # closed meanwhile: this one was in use, close it now
                    conn.close()
            if not conn.closed:
                self._idle.put(conn)
        finally:
            self._slots.release()

    def probe(self, sql: str = "SELECT 1") -> Any:
        """The first value of ``sql`` on a connection of its own, without waiting out an
        outage (a readiness check); raises :class:`DatabaseUnavailable`."""
        try:
            with self._psycopg.connect(self.dsn, autocommit=True,
                                       connect_timeout=CONNECT_TIMEOUT_S) as conn:
                row = conn.execute(sql).fetchone()
        except self._psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"the database {self.where} is unavailable: {exc}") \
                from exc
        return None if row is None else row[0]

    def _checkout(self) -> psycopg.Connection[Any]:
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return self._connect()
            if not _closed_by_server(conn):
                return conn
            conn.close()

    def _connect(self) -> psycopg.Connection[Any]:
        deadline = time.monotonic() + self.outage_wait_s
        pause = _FIRST_PAUSE_S
        while True:
            try:
                return self._psycopg.connect(self.dsn, autocommit=True,
                                             connect_timeout=CONNECT_TIMEOUT_S)
            except self._psycopg.OperationalError as exc:
                if self._closed or time.monotonic() + pause > deadline:
                    raise DatabaseUnavailable(
                        f"the database {self.where} is unavailable: {exc}") from exc
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_S)

    def close(self) -> None:
        """Close the idle connections; one in use is closed when its user is done with it.

        (Closing a connection another thread is using would pull libpq's memory from
        under it.)
        """
        with self._lock:
            self._closed = True
            while True:
                try:
                    self._idle.get_nowait().close()
                except queue.Empty:
                    break


def wait_for_database(url: str, timeout_s: float, *, role: str) -> None:
    """Return once the PostgreSQL database at ``url`` accepts a connection; log a line
    every :data:`WAIT_LOG_EVERY_S` while it does not; raise :class:`DatabaseUnavailable`
    after ``timeout_s`` (a process started before its database waits for it)."""
    import psycopg

    dsn = pg_dsn(url)
    where = dsn.rsplit("@", 1)[-1]
    started = time.monotonic()
    next_line = started
    pause = _FIRST_PAUSE_S
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S):
                pass
        except psycopg.OperationalError as exc:
            waited = time.monotonic() - started
            if waited + pause > timeout_s:
                raise DatabaseUnavailable(
                    f"the database {where} was still unavailable after {waited:.0f} s "
                    f"(the {role} waits up to {timeout_s:g} s at start): "
                    f"{str(exc).strip()}") from exc
            if time.monotonic() >= next_line:
                logger.warning("the %s waits for the database %s (%.0f s so far, up to %g s): "
                               "%s", role, where, waited, timeout_s,
                               str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
                next_line = time.monotonic() + WAIT_LOG_EVERY_S
            time.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE_S)
            continue
        if next_line > started:  # it waited: say that it is over
            logger.warning("the database %s is reachable: the %s starts (after %.1f s)",
                           where, role, time.monotonic() - started)
        return


def _closed_by_server(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection is dead: closed, or with something to read.

    An idle autocommit connection is sent nothing unless the server ends it (a restart
    sends its termination notice first), so a readable socket means it is over.
    """
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _is_outage(exc: BaseException) -> bool:
    """An error of the connection rather than of the statement (SQLSTATE class 08, 57P)."""
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith(("08", "57P"))
