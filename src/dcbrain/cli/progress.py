"""Live progress of a brain run for people: a log of what happens and a status line.

Every event becomes a few lines (the state, the plan syntax-highlighted, each chain/tool
call as it starts and ends, the diff of a revised plan, the validator's verdict); a
spinner line underneath shows the state and the tokens used against the budget. Events
may arrive from a plan's worker thread, so printing is serialized.
"""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.status import Status
from rich.syntax import Syntax
from rich.text import Text

from dcbrain.events import Event

_MAX_VALUE_CHARS = 160


def _short(value: Any, limit: int = _MAX_VALUE_CHARS) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ProgressView:
    """Prints the events of one run on ``console`` and keeps a status line while it runs."""

    def __init__(self, console: Console, *, show_llm_calls: bool = True) -> None:
        self.console = console
        self.show_llm_calls = show_llm_calls
        self.state = "init"
        self.tokens_used = 0
        self.max_tokens = 0
        self.models: list[str] = []
        self._lock = threading.Lock()
        self._status: Status | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> ProgressView:
        if self.console.is_terminal:
            self._status = self.console.status(self._status_text(), spinner="dots")
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _status_text(self) -> str:
        budget = f"{self.tokens_used:,}/{self.max_tokens:,} tokens" if self.max_tokens else ""
        return f"[bold]{self.state}[/bold]  {budget}"

    # -- events ------------------------------------------------------------------------
    def handle(self, event: Event) -> None:
        """Render one event (safe to call from any thread)."""
        with self._lock:
            data = event.data
            renderable = self._render(str(event.type), data)
            if renderable is not None:
                self.console.print(renderable)
            if self._status is not None:
                self._status.update(self._status_text())

    def _render(self, kind: str, data: dict[str, Any]) -> Any:
        handler = getattr(self, f"_on_{kind}", None)
        return handler(data) if handler is not None else None

    def _on_run_started(self, data: dict[str, Any]) -> Any:
        self.max_tokens = int(data.get("max_tokens") or 0)
        return Text.assemble(("question ", "bold"), str(data.get("question", "")))

    def _on_state_changed(self, data: dict[str, Any]) -> Any:
        self.state = str(data.get("dest", self.state))
        style = {"succeeded": "bold green", "failed": "bold red", "aborted": "bold red"}
        return Text(f"● {self.state}", style=style.get(self.state, "bold cyan"))

    def _on_plan_created(self, data: dict[str, Any]) -> Any:
        return Panel(_plan_syntax(str(data.get("plan", ""))), title="plan",
                     title_align="left", border_style="cyan")

    def _on_plan_revised(self, data: dict[str, Any]) -> Any:
        diff = data.get("diff") or {}
        unified = str(diff.get("unified", "")) if isinstance(diff, dict) else str(diff)
        revision = data.get("revision", "")
        parts: list[Any] = []
        reason = str(data.get("reason") or "")
        if reason:
            parts.append(Text(f"why: {_short(reason, 400)}", style="yellow"))
        summary = str(data.get("summary") or "")
        call_lines = [line for line in summary.splitlines()[1:] if line.strip()]
        if call_lines:
            parts.append(Text("calls: " + "; ".join(call_lines), style="magenta"))
        parts.append(Syntax(unified.rstrip("\n") or "(no textual change)", "diff",
                            theme="ansi_dark", background_color="default", word_wrap=True))
        diff_panel = Panel(Group(*parts), title=f"plan revised (revision {revision}) — diff",
                           title_align="left", border_style="yellow")
        plan_panel = Panel(_plan_syntax(str(data.get("plan", ""))),
                           title=f"plan (revision {revision})", title_align="left",
                           border_style="cyan")
        return Group(diff_panel, plan_panel)

    def _on_call_started(self, data: dict[str, Any]) -> Any:
        kind = str(data.get("kind", "tool"))
        if kind == "llm":
            model = str(data.get("model") or data.get("name") or "")
            if model and model not in self.models:
                self.models.append(model)
            if not self.show_llm_calls:
                return None
            return Text(f"  … LLM {model} ({data.get('phase') or 'call'}, "
                        f"{data.get('prompt_tokens', '?')} prompt tokens)", style="dim")
        kwargs = data.get("kwargs") or {}
        args = ", ".join(f"{key}={_short(value, 60)}" for key, value in kwargs.items())
        return Text(f"  → {kind} {data.get('name')}({args})", style="blue")

    def _on_call_finished(self, data: dict[str, Any]) -> Any:
        kind = str(data.get("kind", "tool"))
        seconds = float(data.get("duration_s") or 0.0)
        if kind == "llm":
            if not self.show_llm_calls:
                return None
            return Text(f"  ✓ LLM {data.get('model') or data.get('name')}: "
                        f"{data.get('total_tokens', '?')} tokens, {seconds:.1f}s", style="dim")
        if data.get("error"):
            return Text(f"  ✗ {kind} {data.get('name')} failed after {seconds:.2f}s: "
                        f"{_short(data['error'])}", style="red")
        return Text(f"  ✓ {kind} {data.get('name')} {seconds:.2f}s → "
                    f"{_short(data.get('result'))}", style="green")

    def _on_plan_finished(self, data: dict[str, Any]) -> Any:
        if data.get("ok"):
            return Text(f"  plan result: {_short(data.get('result'))}", style="green")
        return Text(f"  plan failed: {_short(data.get('error'), 400)}", style="red")

    def _on_validation(self, data: dict[str, Any]) -> Any:
        if data.get("is_solved"):
            return Text("  validator: solved", style="bold green")
        return Text(f"  validator: not solved — {_short(data.get('suggestion'), 400)}",
                    style="yellow")

    def _on_budget(self, data: dict[str, Any]) -> Any:
        if "tokens_used" in data:
            self.tokens_used = int(data["tokens_used"])
            self.max_tokens = int(data.get("max_tokens") or self.max_tokens)
        if data.get("exhausted"):
            return Text(f"  budget exhausted: {data.get('budget')} "
                        f"({data.get('used', self.tokens_used)}/{data.get('limit', '')})",
                        style="bold red")
        return None

    def _on_error(self, data: dict[str, Any]) -> Any:
        return Text(f"  error: {_short(data.get('error'), 400)}", style="red")


def _plan_syntax(plan: str) -> Syntax:
    return Syntax(plan, "python", theme="ansi_dark", line_numbers=True,
                  background_color="default", word_wrap=True)
