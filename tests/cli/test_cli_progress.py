"""What `ask` prints of a run's events."""

from __future__ import annotations

import io

from rich.console import Console

from dcbrain.cli.progress import ProgressView
from dcbrain.events import CallRetry, Event


def test_a_retried_call_is_shown_with_its_try_error_and_wait() -> None:
    out = io.StringIO()
    view = ProgressView(Console(file=out, width=200, color_system=None))
    view.handle(Event(CallRetry(call_id="call-1", kind="tool", name="send_mail", attempt=1,
                                attempts=4, error="ConnectionError: reset\x1b[2J",
                                delay_s=0.5)))
    assert out.getvalue().strip() == (
        "↻ tool send_mail try 1 of 4 failed: ConnectionError: reset\\x1b[2J; again in 0.5s")
