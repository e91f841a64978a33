"""Database URLs: what the user writes, what DBOS (SQLAlchemy) and psycopg want."""

from __future__ import annotations

from pathlib import Path


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def pg_dsn(url: str) -> str:
    """A libpq connection string from ``postgresql://`` or ``postgresql+psycopg://``."""
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix):]
    return url


def dbos_url(url: str) -> str:
    """The system-database URL DBOS gets: SQLAlchemy with the psycopg 3 driver."""
    if is_postgres(url):
        return "postgresql+psycopg://" + pg_dsn(url)[len("postgresql://"):]
    return url


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"
