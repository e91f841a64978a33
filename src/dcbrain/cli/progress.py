"""Live progress of a brain run for people: a log of what happens and a status line.

Every event becomes a few lines (the state, the plan syntax-highlighted, each chain/tool
call as it starts and ends, the diff of a revised plan, the validator's verdict); a
spinner line underneath shows the state and the tokens used against the budget — and,
while a streaming planner writes, the last lines of the plan so far (``plan_delta``), until
the whole plan is printed. Events may arrive from a plan's worker thread, so printing is
serialized. Text from plans, tools
and LLMs is shown with its control characters escaped (:func:`terminal_text`) and never
read as rich markup.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.status import Status
from rich.syntax import Syntax
from rich.text import Text

from dcbrain.events import (
    AgentRunStarted,
    BrainRunStarted,
    Budget,
    CallAbandoned,
    CallFinished,
    CallRetry,
    CallStarted,
    ErrorEvent,
    Event,
    EventData,
    LLMCallFinished,
    LLMCallStarted,
    PlanCallFinished,
    PlanCallStarted,
    PlanCreated,
    PlanDelta,
    PlanFinished,
    PlanRevised,
    StateChanged,
    StepCallFinished,
    StepCallStarted,
    Validation,
)
from dcbrain.values.jsonsafe import safe_repr
from dcbrain.values.text import terminal_text

_MAX_VALUE_CHARS = 160
#: Lines of the plan being written shown under the status line.
WRITING_LINES = 12


def _short(value: Any, limit: int = _MAX_VALUE_CHARS) -> str:
    """``value`` on one line of at most ``limit`` characters, safe for a terminal."""
    text = value if isinstance(value, str) else safe_repr(value)
    text = terminal_text(" ".join(text.split()))
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
        #: The planner's reply so far, while it is written (shown under the status line).
        self.writing = ""
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

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No status line while the block runs (a prompt owns the terminal)."""
        with self._lock:
            status = self._status
            if status is not None:
                status.stop()
        try:
            yield
        finally:
            if status is not None:
                status.start()

    def _status_text(self) -> Text:
        budget = f"{self.tokens_used:,}/{self.max_tokens:,} tokens" if self.max_tokens else ""
        line = Text.assemble((self.state, "bold"), f"  {budget}")
        if not self.writing:
            return line
        lines = terminal_text(self.writing).splitlines()
        shown = lines[-WRITING_LINES:]
        if len(lines) > len(shown):
            shown = ["…", *shown]
        return Text.assemble(line, ("  writing the plan:\n", "cyan"), ("\n".join(shown), "dim"))

    # -- events ------------------------------------------------------------------------
    def handle(self, event: Event) -> None:
        """Render one event (safe to call from any thread)."""
        with self._lock:
            renderable = self._render(event.payload)
            if renderable is not None:
                self.console.print(renderable)
            if self._status is not None:
                self._status.update(self._status_text())

    def _render(self, payload: EventData) -> Any:
        match payload:
            case BrainRunStarted():
                self.max_tokens = payload.max_tokens
                return Text.assemble(("question ", "bold"), terminal_text(payload.question))
            case AgentRunStarted():
                return Text.assemble(("goal ", "bold"), terminal_text(payload.goal))
            case StateChanged():
                self.writing = ""
                self.state = terminal_text(payload.dest or self.state)
                style = {"succeeded": "bold green", "failed": "bold red", "aborted": "bold red"}
                return Text(f"● {self.state}", style=style.get(self.state, "bold cyan"))
            case PlanDelta():
                self.writing = payload.text if payload.offset == 0 else self.writing + payload.text
                return None
            case PlanCreated():
                self.writing = ""
                return Panel(_plan_syntax(payload.plan or ""), title="plan",
                             title_align="left", border_style="cyan")
            case PlanRevised():
                self.writing = ""
                return self._revised(payload)
            case CallStarted():
                return self._call_started(payload)
            case CallFinished():
                return self._call_finished(payload)
            case CallAbandoned():
                return Text(f"  ⧗ {payload.kind} {_short(payload.name)} abandoned after "
                            f"{payload.running_s or 0.0:.1f}s: it may still be running; its "
                            "return will be ignored", style="red")
            case CallRetry():
                return Text(f"  ↻ {payload.kind} {_short(payload.name)} try {payload.attempt} "
                            f"of {payload.attempts} failed: {_short(payload.error)}; again "
                            f"in {payload.delay_s:.1f}s", style="yellow")
            case PlanFinished():
                if payload.ok:
                    return Text(f"  plan result: {_short(payload.result)}", style="green")
                return Text(f"  plan failed: {_short(payload.error, 400)}", style="red")
            case Validation():
                if payload.is_solved:
                    return Text("  validator: solved", style="bold green")
                return Text(f"  validator: not solved — {_short(payload.suggestion, 400)}",
                            style="yellow")
            case Budget():
                return self._budget(payload)
            case ErrorEvent():
                return Text(f"  error: {_short(payload.error, 400)}", style="red")
        return None

    def _revised(self, payload: PlanRevised) -> Any:
        unified = terminal_text(payload.diff.unified or "")
        revision = payload.revision
        parts: list[Any] = []
        if payload.reason:
            parts.append(Text(f"why: {_short(payload.reason, 400)}", style="yellow"))
        call_lines = [line for line in terminal_text(payload.summary or "").splitlines()[1:]
                      if line.strip()]
        if call_lines:
            parts.append(Text("calls: " + "; ".join(call_lines), style="magenta"))
        parts.append(Syntax(unified.rstrip("\n") or "(no textual change)", "diff",
                            theme="ansi_dark", background_color="default", word_wrap=True))
        diff_panel = Panel(Group(*parts), title=f"plan revised (revision {revision}) — diff",
                           title_align="left", border_style="yellow")
        plan_panel = Panel(_plan_syntax(payload.plan or ""),
                           title=f"plan (revision {revision})", title_align="left",
                           border_style="cyan")
        return Group(diff_panel, plan_panel)

    def _call_started(self, payload: CallStarted) -> Any:
        if isinstance(payload, LLMCallStarted):
            model = terminal_text(payload.model or payload.name)
            if model and model not in self.models:
                self.models.append(model)
            if not self.show_llm_calls:
                return None
            return Text(f"  … LLM {model} ({payload.phase}, "
                        f"{payload.prompt_tokens} prompt tokens)", style="dim")
        if not isinstance(payload, PlanCallStarted | StepCallStarted):
            return None
        if isinstance(payload, PlanCallStarted) and payload.reused:
            return None  # shown once, when it finishes
        args = ", ".join(f"{_short(key, 60)}={_short(value, 60)}"
                         for key, value in payload.args.items())
        return Text(f"  → {payload.kind} {_short(payload.name)}({args})", style="blue")

    def _call_finished(self, payload: CallFinished) -> Any:
        kind, name = payload.kind, _short(payload.name)
        seconds = payload.duration_s
        if isinstance(payload, LLMCallFinished):
            if not self.show_llm_calls:
                return None
            return Text(f"  ✓ LLM {_short(payload.model or name)}: "
                        f"{payload.total_tokens} tokens, {seconds:.1f}s", style="dim")
        if payload.status == "aborted":
            return Text(f"  ■ {kind} {name} stopped: the run ended first", style="red")
        if payload.status == "error":
            return Text(f"  ✗ {kind} {name} failed after {seconds:.2f}s: "
                        f"{_short(payload.error)}", style="red")
        if not isinstance(payload, PlanCallFinished | StepCallFinished):
            return None
        if isinstance(payload, PlanCallFinished) and payload.reused:
            return Text(f"  ↺ {kind} {name} reused from an earlier attempt → "
                        f"{_short(payload.result)}", style="cyan")
        return Text(f"  ✓ {kind} {name} {seconds:.2f}s → {_short(payload.result)}",
                    style="green")

    def _budget(self, payload: Budget) -> Any:
        if payload.tokens_used is not None:
            self.tokens_used = payload.tokens_used
            self.max_tokens = payload.max_tokens or self.max_tokens
        if payload.exhausted:
            used = payload.used if payload.used is not None else self.tokens_used
            limit = payload.limit if payload.limit is not None else ""
            return Text(f"  budget exhausted: {_short(payload.budget)} ({used}/{limit})",
                        style="bold red")
        return None


def _plan_syntax(plan: str) -> Syntax:
    return Syntax(terminal_text(plan), "python", theme="ansi_dark", line_numbers=True,
                  background_color="default", word_wrap=True)
