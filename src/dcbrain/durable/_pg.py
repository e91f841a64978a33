"""A small pool of PostgreSQL connections shared by the threads of one process."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dcbrain.durable._urls import pg_dsn

if TYPE_CHECKING:
    import psycopg


class Connections:
    """At most ``max_connections`` autocommit connections to ``url``, opened on demand."""

    def __init__(self, url: str, *, max_connections: int = 8) -> None:
        import psycopg

        self.dsn = pg_dsn(url)
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
        """A connection for this thread until the block ends (a broken one is not reused)."""
        self._slots.acquire()
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self._psycopg.connect(self.dsn, autocommit=True)
            try:
                yield conn
            except self._psycopg.OperationalError:
                conn.close()  # broken: the next use opens a new one
                raise
            with self._lock:
                if self._closed:  # closed meanwhile: this one was in use, close it now
                    conn.close()
            if not conn.closed:
                self._idle.put(conn)
        finally:
            self._slots.release()

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
