"""A private PostgreSQL cluster for tests and benchmarks (Debian's ``initdb`` + ``pg_ctl``).

In a temporary directory, bound to 127.0.0.1 on a free port, fsync off. As root it runs as
the ``postgres`` user via ``runuser`` (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bindir() -> Path | None:
    """Where ``pg_ctl`` is (the newest Debian version first), or ``None``."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresCluster:
    """A private cluster in ``root``: :meth:`stop` and :meth:`start` it (an outage)."""

    def __init__(self, bindir: Path, root: Path, port: int, prefix: list[str],
                 options: str) -> None:
        self.bindir, self.root, self.port = bindir, root, port
        self._prefix, self._options = prefix, options
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        subprocess.run([*self._prefix, str(self.bindir / "pg_ctl"), "-D",
                        str(self.root / "data"), *args], check=check, capture_output=True)

    def start(self) -> None:
        self._pg_ctl("-l", str(self.root / "log"), "-o", self._options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: clients are disconnected, as in a restart)."""
        self._pg_ctl("-m", mode, "-w", "stop", check=False)


@contextmanager
def postgres_cluster(bindir: Path, *, max_connections: int = 300) -> Iterator[PostgresCluster]:
    """Start a cluster; yields it; stops and deletes it."""
    root = Path(tempfile.mkdtemp(prefix="dcbrain-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    options = (f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off "
               f"-c synchronous_commit=off -c full_page_writes=off "
               f"-c max_connections={max_connections}")
    cluster = PostgresCluster(bindir, root, port, prefix, options)
    try:
        subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(root / "data"), "-U", "postgres",
             "-A", "trust", "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def private_postgres(bindir: Path, *, max_connections: int = 300) -> Iterator[str]:
    """Start a cluster; yields the URL of its ``postgres`` database; stops and deletes it."""
    with postgres_cluster(bindir, max_connections=max_connections) as cluster:
        yield cluster.url


def fresh_database(server_url: str) -> str:
    """Create an empty database on the cluster at ``server_url``; returns its URL."""
    import psycopg

    name = f"d_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
