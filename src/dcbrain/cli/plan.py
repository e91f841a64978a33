"""``dcbrain plan check|run``: check and run tf_plan scripts from files.

``check`` prints one ``FILE:LINE:COL: error: message`` line per problem (the format of
compilers and linters, so editors and scripts can jump to it). ``run`` writes the plan's
``print`` output verbatim to stdout, as CPython would, and reports an error on stderr as
``FILE:LINE:COL: Kind: message``; on a terminal, control characters are shown escaped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dcbrain.cli._config import ConfigOption, config_errors_exit, load_config_or_exit
from dcbrain.cli._output import ExitCode, fail_usage, print_json, write_text
from dcbrain.tfplan.limits import Limits

if TYPE_CHECKING:
    from dcbrain.chain import TFChainInterpreter
    from dcbrain.tfplan import Interpreter, TFInterpreterError

app = typer.Typer(help="Check and run tf_plan scripts.", no_args_is_help=True)

FileArg = Annotated[Path, typer.Argument(help="The tf_plan script.", metavar="FILE",
                                         show_default=False)]
ToolsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--tools",
        metavar="TOOLS.py",
        help="A Python file whose public functions the plan may call (repeatable).",
        show_default=False,
    ),
]


@app.command()
def check(file: FileArg, tools: ToolsOption = None, config: ConfigOption = None) -> None:
    """Check FILE statically; print every problem as FILE:LINE:COL: error: message."""
    source = _read(file)
    with _interpreter(tools, config, Limits()) as interpreter:
        problems = interpreter.check(source)
    for problem in problems:
        write_text(f"{file}:{problem.line}:{problem.col}: error: {problem.message}\n")
    if problems:
        raise typer.Exit(ExitCode.FAILED)


@app.command()
def run(
    file: FileArg,
    tools: ToolsOption = None,
    config: ConfigOption = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the result (or the error) as one JSON object.")
    ] = False,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            "--limit",
            metavar="NAME=VALUE",
            help=f"Override a sandbox limit ({', '.join(Limits.names())}); repeatable.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Check FILE, then run it; its print output goes to stdout verbatim."""
    from dcbrain.tfplan import Interpreter, TFInterpreterError

    source = _read(file)
    limits = _parse_limits(limit or [])
    with _interpreter(tools, config, limits) as interpreter:
        try:
            result = (interpreter.run(source, check=True) if isinstance(interpreter, Interpreter)
                      else interpreter.evaluate(source, check=True))
        except TFInterpreterError as error:
            _report_error(file, error, json_output)
            raise typer.Exit(ExitCode.FAILED) from None
    if json_output:
        print_json(result.to_dict())
    else:
        write_text(result.stdout)
        sys.stdout.flush()


@contextmanager
def _interpreter(
    tools: list[Path] | None, config: Path | None, limits: Limits
) -> Iterator[Interpreter | TFChainInterpreter]:
    """The plan's interpreter: the ``--tools`` functions, and the config's chains, tool
    files and MCP servers (started for the command, stopped after it), if there is one."""
    from dcbrain.config import config_file
    from dcbrain.tfplan import Interpreter

    functions = _load_tools(tools)
    if config_file(config)[0] is None:
        yield Interpreter(functions, limits=limits)
        return
    from dcbrain.chain import TFChainInterpreter
    from dcbrain.config.composition import build_plan_callables
    from dcbrain.exceptions import TFError

    loaded = load_config_or_exit(config)
    with config_errors_exit():
        callables = build_plan_callables(loaded)
    try:
        for name in functions.keys() & {*callables.tools, *callables.chains}:
            fail_usage(f"--tools: function {name!r} clashes with {loaded.source}'s {name!r}")
        try:
            interpreter = TFChainInterpreter(
                callables.chains, tools=[*callables.tools.values(), *functions.values()],
                default_llm=callables.default_llm, limits=limits)
        except (TFError, ValueError) as exc:
            fail_usage(f"{loaded.source}: {exc}")
        yield interpreter
    finally:
        callables.close()


def _report_error(file: Path, error: TFInterpreterError, json_output: bool) -> None:
    problems = list(getattr(error, "problems", []))
    if json_output:
        payload: dict[str, Any] = {
            "error": {
                "kind": error.kind,
                "line": error.line,
                "col": error.col,
                "message": error.message,
                "problems": [
                    {"line": p.line, "col": p.col, "message": p.message} for p in problems
                ],
            },
            "stdout": error.stdout,
            "trace": [record.to_dict() for record in error.trace],
        }
        print_json(payload)
        return
    write_text(error.stdout)
    sys.stdout.flush()
    if problems:
        lines = [f"{file}:{p.line}:{p.col}: {error.kind}: {p.message}" for p in problems]
    else:
        lines = [f"{file}:{error.line}:{max(error.col, 1)}: {error.kind}: {error.message}"]
    write_text("\n".join(lines) + "\n", sys.stderr)


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        fail_usage(f"cannot read {file}: {exc.strerror or exc}")
    except UnicodeDecodeError:
        fail_usage(f"{file} is not UTF-8 text")


def _load_tools(paths: list[Path] | None) -> dict[str, Callable[..., Any]]:
    if not paths:
        return {}
    from dcbrain.config import ConfigError, load_tool_file  # pydantic: only when needed
    from dcbrain.tfplan.checker import BUILTIN_NAMES

    callables: dict[str, Callable[..., Any]] = {}
    defined_in: dict[str, Path] = {}
    for path in paths:
        try:
            loaded = load_tool_file(path)
        except ConfigError as exc:
            fail_usage(str(exc))
        for name in loaded.keys() & BUILTIN_NAMES:
            fail_usage(f"{path}: function {name!r} clashes with the tf_plan builtin {name}")
        for name in sorted(loaded.keys() & callables.keys()):
            fail_usage(f"{path}: function {name!r} is also defined in {defined_in[name]}; "
                       "rename one of them")
        callables.update(loaded)
        defined_in.update(dict.fromkeys(loaded, path))
    return callables


def _parse_limits(items: list[str]) -> Limits:
    overrides: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            fail_usage(f"--limit expects NAME=VALUE, got {item!r}")
        overrides[name.strip()] = value.strip()
    try:
        return Limits().with_overrides(overrides)
    except ValueError as exc:
        fail_usage(f"--limit: {exc}")
