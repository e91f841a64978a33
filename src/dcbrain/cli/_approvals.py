"""``dcbrain ask``'s approvals: a person at the terminal answers ``y``/``n`` (with an
optional reason) for each call that needs approval; ``--approve-all``/``--deny-all``
answer for scripts."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING, Literal

from dcbrain.approvals import ApprovalRequest, AskingDesk
from dcbrain.values.jsonsafe import dumps
from dcbrain.values.text import terminal_text

if TYPE_CHECKING:
    from rich.console import Console

    from dcbrain.cli.progress import ProgressView

ApprovalMode = Literal["ask", "approve", "deny"]

#: Who decided, as ``approval_decided`` says it.
BY = {"ask": "terminal", "approve": "--approve-all", "deny": "--deny-all"}


def terminal_desk(mode: ApprovalMode, console: Console,
                  view: ProgressView | None = None) -> AskingDesk:
    """The desk of a ``dcbrain ask`` run: ``mode`` says who answers."""

    async def ask(request: ApprovalRequest) -> tuple[bool, str]:
        if mode == "approve":
            _say(console, request, "approved by --approve-all")
            return True, ""
        if mode == "deny":
            _say(console, request, "denied by --deny-all")
            return False, "denied by --deny-all"
        if not sys.stdin.isatty():
            _say(console, request, "denied: no terminal to ask")
            return False, "nobody could be asked (no terminal): use --approve-all or --deny-all"
        return await asyncio.to_thread(_prompt, console, request, view)

    return AskingDesk(ask, by=BY[mode])


def _say(console: Console, request: ApprovalRequest, what: str) -> None:
    from rich.text import Text

    console.print(Text(terminal_text(f"approval: {request.tool}() at line {request.line}: "
                                     f"{what}"), style="yellow"))


def _prompt(console: Console, request: ApprovalRequest,
            view: ProgressView | None) -> tuple[bool, str]:
    """Show the call and ask; the progress spinner is paused meanwhile."""
    from rich.panel import Panel
    from rich.prompt import Confirm, Prompt
    from rich.text import Text

    with view.paused() if view is not None else contextlib.nullcontext():
        body = Text()
        body.append(f"{request.tool}", style="bold")
        body.append(f"({terminal_text(dumps(request.arguments))[:2000]})\n")
        body.append(f"plan line {request.line}: ", style="dim")
        line = request.plan.splitlines()[request.line - 1] if 0 < request.line <= len(
            request.plan.splitlines()) else ""
        body.append(terminal_text(line.strip()) + "\n")
        body.append(terminal_text(request.why), style="italic")
        console.print(Panel(body, title="approval needed", border_style="yellow"))
        approved = Confirm.ask("Run this call?", console=console)
        reason = "" if approved else Prompt.ask("Reason (optional)", console=console,
                                                default="", show_default=False)
    return approved, reason
