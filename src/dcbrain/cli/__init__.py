"""The ``dcbrain`` command line: ask, demo, plan check/run, init, config check and serve.

Exit codes are the contract scripts rely on: 0 succeeded, 1 failed (a plan error, an
answer the brain could not validate), 2 usage or configuration error, 3 aborted or
timed out, 130 interrupted (Ctrl-C).

Commands import what they need when they run, so ``dcbrain --help`` starts fast.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.cli.app import app

#: The shell's exit status for a process ended by SIGINT (128 + 2).
INTERRUPTED_EXIT_CODE = 130


def main() -> None:
    """Entry point of the ``dcbrain`` console script.

    Ctrl-C ends the command at once with exit code 130 and no traceback, whatever it is
    doing (importing, waiting for an LLM, running a plan). ``serve`` installs its own
    handler while it listens, shuts down gracefully, then ends here the same way.
    """
    try:  # an interrupt landing while the handler is installed is caught below too
        signal.signal(signal.SIGINT, _interrupted)
        from dcbrain.cli.app import app

        app()
    except KeyboardInterrupt:  # raised before the handler was installed, or re-raised
        _interrupted(signal.SIGINT, None)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    # Exiting from the handler, not by unwinding: worker threads (a plan's tools, a local
    # model's decoding) would otherwise hold the process until they finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.isatty():
                stream.write("\x1b[?25h")  # a live status line hides the cursor
            stream.flush()
        except (OSError, RuntimeError, ValueError):  # closed, or flushing already
            pass
    os._exit(INTERRUPTED_EXIT_CODE)


__all__ = ["INTERRUPTED_EXIT_CODE", "app", "main"]

__getattr__, __dir__ = lazy_exports(__name__, {"app": "dcbrain.cli.app"})
