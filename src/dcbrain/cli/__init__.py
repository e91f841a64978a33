"""The ``dcbrain`` command line: ask, demo, plan check/run, init and config check.

Exit codes are the contract scripts rely on: 0 succeeded, 1 failed (a plan error, an
answer the brain could not validate), 2 usage or configuration error, 3 aborted or
timed out.
"""

from __future__ import annotations

from dcbrain.cli.app import app


def main() -> None:
    """Entry point of the ``dcbrain`` console script."""
    app()


__all__ = ["app", "main"]
