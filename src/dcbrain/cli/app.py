"""The typer application: one sub-app or command per module."""

from __future__ import annotations

import typer

from dcbrain.cli import ask, config_cmd, config_show, demo, mcp_cmd, plan, runs, worker_cmd
from dcbrain.cli.serve import register as register_serve

app = typer.Typer(
    name="dcbrain",
    help="LLM agents that plan in code: ask questions, run the demo, check and run tf_plan "
    "scripts, serve the HTTP API and web page. Exit codes: 0 succeeded, 1 failed, 2 usage "
    "or configuration error, 3 aborted or timed out, 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help and errors: typer's rich formatting takes longer to import than all the rest.
    rich_markup_mode=None,
)
app.add_typer(plan.app, name="plan")
config_cmd.config_app.command("show")(config_show.show)
app.add_typer(config_cmd.config_app, name="config")
app.command("init")(config_cmd.init)
app.command("ask")(ask.ask)
app.command("demo")(demo.demo)
app.command("mcp")(mcp_cmd.mcp)
register_serve(app)
worker_cmd.register(app)
runs.register(app)
