"""Fixtures for durable runs: a private PostgreSQL cluster, a fresh database per test.

The cluster is Debian's PostgreSQL (``initdb`` + ``pg_ctl``) in a temporary directory,
bound to 127.0.0.1 on a free port, with fsync off. As root it runs as the ``postgres``
user (PostgreSQL refuses root). Without the binaries (or without the ``durable`` extra)
the PostgreSQL tests are skipped on a developer machine but fail in CI (``CI=true``).
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
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dcbrain import SQLiteMemory
from support.durable_brains import CountingTools

if TYPE_CHECKING:
    from support.durable_harness import Backend

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false, except in CI where it is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} (required in CI)")
    pytest.skip(reason)


def _durable_extra() -> None:
    try:
        import dbos  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        require(False, 'the durable extra is not installed: pip install -e ".[durable]"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pg_bindir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("pg_ctl")
    return Path(found).resolve().parent if found else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a private PostgreSQL cluster's ``postgres`` database."""
    _durable_extra()
    bindir = _pg_bindir()
    require(bindir is not None, "PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="dcbrain-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
         "-E", "UTF8", "--no-sync"],
        check=True, capture_output=True,
    )
    options = (f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off "
               "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
    subprocess.run(
        [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"),
         "-o", options, "-w", "start"],
        check=True, capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the private cluster (one per test)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_server.rsplit("/", 1)[0] + f"/{name}"


# -- backends and an engine in this process ------------------------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    _durable_extra()
    from dcbrain.durable import PostgresRunStore, RunStore, SQLiteRunStore
    from dcbrain.durable._urls import sqlite_url
    from support.durable_harness import Backend

    if request.param == "sqlite":
        memory = SQLiteMemory(tmp_path / "server.db")
        store: RunStore = SQLiteRunStore(memory, tmp_path / "journal.sqlite")
        yield Backend("sqlite", sqlite_url(tmp_path / "dbos.sqlite"), store)
        memory.close()
    else:
        url = request.getfixturevalue("postgres_url")
        store = PostgresRunStore(url)
        yield Backend("postgres", url, store)
        store.close()


@pytest.fixture
def counting(tmp_path: Path) -> CountingTools:
    return CountingTools(tmp_path / "counters")


