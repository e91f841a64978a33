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


@contextmanager
def private_postgres(bindir: Path, *, max_connections: int = 300) -> Iterator[str]:
    """Start a cluster; yields the URL of its ``postgres`` database; stops and deletes it."""
    root = Path(tempfile.mkdtemp(prefix="dcbrain-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()
    try:
        subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
             "-E", "UTF8", "--no-sync"],
            check=True, capture_output=True,
        )
        options = (f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off "
                   f"-c synchronous_commit=off -c full_page_writes=off "
                   f"-c max_connections={max_connections}")
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"),
             "-o", options, "-w", "start"],
            check=True, capture_output=True,
        )
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """Create an empty database on the cluster at ``server_url``; returns its URL."""
    import psycopg

    name = f"d_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
