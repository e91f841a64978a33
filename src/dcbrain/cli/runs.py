"""``dcbrain runs``: operate on durable runs in the database directly."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from dcbrain.cli._config import (
    AppVersionOption,
    ConfigOption,
    config_errors_exit,
    load_config_or_exit,
)
from dcbrain.cli._output import ExitCode, fail_usage, print_json

runs_app = typer.Typer(help="Operate on durable runs (PostgreSQL).", no_args_is_help=True)

ANY_VERSION_HELP = (
    "Resume the run under this command's application version (--app-version, else the "
    "config's) instead of the one it started under, which no live worker may run. Divergence "
    "risk: the run executes from its start on its journal, so its finished calls are "
    "answered from the journal and never run again, but the new version may plan "
    "differently (other prompts, tools or models): a call the journal does not hold runs "
    "for the first time, and a different call where one is recorded fails the run "
    "(JournalDivergence).")


@runs_app.command("resume")
def resume(
    run_id: Annotated[str, typer.Argument(help="The run's id.", show_default=False)],
    db: Annotated[str, typer.Option("--db", help="PostgreSQL URL shared by workers and API "
                                    "nodes (postgresql://user@host:port/dbname).")],
    any_version: Annotated[bool, typer.Option("--any-version", help=ANY_VERSION_HELP)] = False,
    app_version: AppVersionOption = None,
    config: ConfigOption = None,
) -> None:
    """Put a stranded run (its worker is gone, no live worker runs its version) back on
    the queue; prints its record."""
    from dcbrain.durable import DurableEngine, PostgresDurableStore
    from dcbrain.durable._urls import is_postgres
    from dcbrain.durable.setup import chosen_version
    from dcbrain.exceptions import RunConflict

    if not is_postgres(db):
        fail_usage(f"--db must be a postgresql:// URL, not {db!r}")
    loaded = None if app_version else load_config_or_exit(config)
    with config_errors_exit():
        try:
            version = chosen_version(loaded, app_version)
        except (OSError, ValueError) as exc:
            fail_usage(str(exc))
    store = PostgresDurableStore(db)
    engine = DurableEngine(db, store, app_version=version)
    engine.start()
    try:
        record = engine.resume(run_id, any_version=any_version)
    except RunConflict as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(ExitCode.FAILED) from None
    finally:
        engine.stop()
        store.close()
    print_json({"run_id": record.run_id, "status": record.status,
                "resumed_from_version": record.data.get("resumed_from_version"),
                "resumed_under_version": record.data.get("resumed_under_version")})


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")
