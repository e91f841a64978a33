"""``dcbrain ask``: answer a question with the brain the config describes.

On a terminal the run is shown live (see :mod:`dcbrain.cli.progress`) and the answer
follows; with ``--json``, or when stdout is not a terminal, one JSON object is printed.
Exit codes: 0 succeeded, 1 failed, 2 usage/config error, 3 aborted or timed out,
130 interrupted.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit
from dcbrain.cli._observe import LogFormatOption, install_log_format
from dcbrain.cli._output import ExitCode, fail_usage, print_json, write_text
from dcbrain.values.jsonsafe import dumps
from dcbrain.values.text import terminal_text

if TYPE_CHECKING:
    from rich.console import Console

    from dcbrain.config.runtime import Runtime
    from dcbrain.runs import RunRequest


def ask(
    question: Annotated[str, typer.Argument(help="The question to answer.", show_default=False)],
    config: ConfigOption = None,
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
    approve_all: Annotated[
        bool, typer.Option("--approve-all", help="Approve every call that needs approval "
                           "without asking (scripts).")
    ] = False,
    deny_all: Annotated[
        bool, typer.Option("--deny-all", help="Deny every call that needs approval without "
                           "asking (scripts).")
    ] = False,
    log_format: LogFormatOption = None,
) -> None:
    """Answer QUESTION: plan in tf_plan, run, validate, replan; show it live.

    A call that needs approval is shown and asked about (y/n, then an optional reason);
    --approve-all or --deny-all answer for scripts.

    Exit codes: 0 succeeded, 1 failed, 2 usage or config error, 3 aborted or timed out,
    130 interrupted.
    """
    from dcbrain.config.runtime import AppSettings, build_runtime
    from dcbrain.runs import RunRequest

    if not question.strip():
        fail_usage("the question is empty: dcbrain ask \"your question\"")
    if json_output and text_output:
        fail_usage("--json and --text exclude each other")
    if approve_all and deny_all:
        fail_usage("--approve-all and --deny-all exclude each other")
    as_json = json_output or (not text_output and not sys.stdout.isatty())
    loaded = load_config_or_exit(config)
    # progress is ask's own output: log lines only when asked for
    install_log_format(log_format, default_format=None)
    with config_errors_exit():
        runtime = build_runtime(AppSettings(loaded, trace_path=trace, keep_runs=False,
                                            role="ask"))
    mode: Literal["ask", "approve", "deny"] = "approve" if approve_all \
        else "deny" if deny_all else "ask"
    with runtime:
        code = _answer(runtime, RunRequest(uuid.uuid4().hex, conversation, question),
                       mode, as_json)
    raise typer.Exit(code)


def _answer(runtime: Runtime, request: RunRequest, mode: Literal["ask", "approve", "deny"],
            as_json: bool) -> int:
    """Run ``request`` on the runtime's brain, show it (live, or as one JSON object) and
    return the exit code."""
    import asyncio

    from rich.console import Console

    from dcbrain.brain.deps import RunDeps
    from dcbrain.cli._approvals import terminal_desk
    from dcbrain.cli.progress import ProgressView
    from dcbrain.runs import execute_run

    brain = runtime.brain
    assert brain is not None
    console = Console(highlight=False, soft_wrap=False)
    view = ProgressView(console)
    descriptions = _model_descriptions(brain)
    if as_json:  # prompts go to stderr: stdout is the JSON object
        desk = terminal_desk(mode, Console(stderr=True, highlight=False))
        outcome = asyncio.run(execute_run(brain, request, RunDeps(approvals=desk),
                                          lambda event: None))
    else:
        with view:
            deps = RunDeps(approvals=terminal_desk(mode, console, view))
            outcome = asyncio.run(execute_run(brain, request, deps, view.handle))
    result = outcome.result
    if result is None:  # the run ended without a result of the brain's (it failed around it)
        write_text(f"error: {outcome.error or outcome.reason}\n", sys.stderr)
        return ExitCode.FAILED
    models = [descriptions.get(name, name) for name in result.usage.per_model]
    judge = result.validated_by
    if as_json:
        record = result.to_dict(include_events=False)
        record["models"] = models
        record["validated_by"] = judge
        print_json(record)
    else:
        show_result(console, result, models, judge)
    return exit_code(result.status, result.reason)


def exit_code(status: str, reason: str | None) -> int:
    if status == "succeeded":
        return ExitCode.SUCCEEDED
    if status == "aborted" or reason in ("timeout", "aborted"):
        return ExitCode.ABORTED
    return ExitCode.FAILED


def outcome_text(status: str, reason: str | None, judge: dict[str, Any] | None) -> str:
    """``succeeded (validated by gpt-4o)``, or says plainly that a tiny model's check is weak."""
    if reason == "validated" and judge is not None:
        if judge["weak"]:
            return f"{status} (checked by {judge['model']} — weak)"
        return f"{status} (validated by {judge['model']})"
    return f"{status} ({reason})"


def show_result(
    console: Console, result: Any, models: list[str], judge: dict[str, Any] | None = None
) -> None:
    """The final answer (or why there is none), its cost, and which model answered."""
    from rich.text import Text

    usage = result.usage
    plans = len(result.plans)
    console.print()
    style = "bold green" if result.status == "succeeded" else "bold red"
    outcome = terminal_text(outcome_text(result.status, result.reason, judge))
    console.print(Text.assemble(
        (outcome, style),
        f" — {plans} plan{'s' if plans != 1 else ''}, {usage.total_tokens:,} tokens "
        f"in {usage.requests} LLM call{'s' if usage.requests != 1 else ''}"))
    if result.final_result is not None:
        answer = result.final_result
        text = answer if isinstance(answer, str) else dumps(answer, indent=2)
        console.print("[bold]answer:[/bold]")
        console.print(Text(terminal_text(text)))
    elif result.error or result.last_error:
        console.print(Text(terminal_text(str(result.error or result.last_error)), style="red"))
    if judge is not None and judge["weak"]:
        console.print("[yellow]the check is weak: a 135M-parameter model judged the answer; "
                      "configure a real provider to validate answers[/yellow]")
    if models:
        console.print(Text(terminal_text(f"answered by: {', '.join(models)}"), style="dim"))


def _model_descriptions(brain: Any) -> dict[str, str]:
    """Model name → how people should read it (the local model says what it is)."""
    descriptions: dict[str, str] = {}
    for attribute in ("default_llm", "plan_llm", "validate_llm"):
        llm = getattr(brain, attribute, None)
        description = getattr(llm, "description", None)
        if llm is not None and isinstance(description, str):
            descriptions[str(llm.model)] = description
    return descriptions
