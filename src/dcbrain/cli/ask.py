"""``dcbrain ask``: answer a question with the brain the config describes.

On a terminal the run is shown live (see :mod:`dcbrain.cli.progress`) and the answer
follows; with ``--json``, or when stdout is not a terminal, one JSON object is printed.
Exit codes: 0 succeeded, 1 failed, 2 usage/config error, 3 aborted or timed out.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from dcbrain.cli._output import ExitCode, fail_usage, print_json
from dcbrain.cli.progress import ProgressView
from dcbrain.config import DEFAULT_CONFIG_FILE, Config, ConfigError, build_brain, find_config
from dcbrain.exceptions import TFBrainError, TFError


def ask(
    question: Annotated[str, typer.Argument(help="The question to answer.", show_default=False)],
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help=f"Config file (default: ./{DEFAULT_CONFIG_FILE} "
                     "if present, else the embedded local model).", show_default=False),
    ] = None,
    conversation: Annotated[
        str, typer.Option("--conversation", help="Conversation id (memory and earlier attempts).")
    ] = "default",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of live progress.")
    ] = False,
    text_output: Annotated[
        bool, typer.Option("--text", help="Show progress and the answer even when stdout is "
                           "not a terminal.")
    ] = False,
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="Append every event of the run to this JSONL file.",
                     show_default=False),
    ] = None,
) -> None:
    """Answer QUESTION: plan in tf_plan, run, validate, replan; show it live."""
    if json_output and text_output:
        fail_usage("--json and --text exclude each other")
    as_json = json_output or (not text_output and not sys.stdout.isatty())
    loaded = _load(config)
    try:
        brain = build_brain(loaded, trace_path=trace)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        raise typer.Exit(ExitCode.USAGE) from None
    console = Console(highlight=False, soft_wrap=False)
    view = ProgressView(console)
    descriptions = _model_descriptions(brain)
    try:
        if as_json:
            result = asyncio.run(brain.async_run(question, conversation))
        else:
            with view:
                result = asyncio.run(brain.async_run(question, conversation,
                                                     on_event=view.handle))
    except TFBrainError as exc:
        partial = getattr(exc, "result", None)
        if partial is None:
            sys.stderr.write(f"error: {exc}\n")
            raise typer.Exit(ExitCode.FAILED) from None
        result = partial
    except TFError as exc:
        sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
        raise typer.Exit(ExitCode.FAILED) from None
    except KeyboardInterrupt:
        sys.stderr.write("aborted\n")
        raise typer.Exit(ExitCode.ABORTED) from None
    models = [descriptions.get(name, name) for name in result.usage.per_model]
    if as_json:
        record = result.to_dict(include_events=False)
        record["models"] = models
        print_json(record)
    else:
        show_result(console, result, models)
    raise typer.Exit(exit_code(result.status, result.reason))


def exit_code(status: str, reason: str | None) -> int:
    if status == "succeeded":
        return ExitCode.SUCCEEDED
    if status == "aborted" or reason in ("timeout", "aborted"):
        return ExitCode.ABORTED
    return ExitCode.FAILED


def show_result(console: Console, result: Any, models: list[str]) -> None:
    """The final answer (or why there is none), its cost, and which model answered."""
    usage = result.usage
    plans = len(result.plans)
    console.print()
    style = "bold green" if result.status == "succeeded" else "bold red"
    console.print(f"[{style}]{result.status}[/{style}] ({result.reason}) — "
                  f"{plans} plan{'s' if plans != 1 else ''}, {usage.total_tokens:,} tokens "
                  f"in {usage.requests} LLM call{'s' if usage.requests != 1 else ''}")
    if result.final_result is not None:
        answer = result.final_result
        text = answer if isinstance(answer, str) else _json_text(answer)
        console.print("[bold]answer:[/bold]")
        console.print(text, markup=False)
    elif result.error or result.last_error:
        console.print(f"[red]{result.error or result.last_error}[/red]", markup=True)
    if models:
        console.print(f"[dim]answered by: {', '.join(models)}[/dim]")


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _load(path: Path | None) -> Config:
    try:
        return find_config(path)
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        raise typer.Exit(ExitCode.USAGE) from None


def _model_descriptions(brain: Any) -> dict[str, str]:
    """Model name → how people should read it (the local model says what it is)."""
    descriptions: dict[str, str] = {}
    for attribute in ("default_llm", "plan_llm", "validate_llm"):
        llm = getattr(brain, attribute, None)
        description = getattr(llm, "description", None)
        if llm is not None and isinstance(description, str):
            descriptions[str(llm.model)] = description
    return descriptions
