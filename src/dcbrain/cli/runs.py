"""``dcbrain runs ls|show|cancel|resume|approve|deny|prune``: runs for operators, through a
server or the database.

With ``--url`` every command goes through the server's admin API (``--token`` or
``DCBRAIN_API_TOKEN``); without it, through the database a server or its workers use:
``--db postgresql://…`` as they are given it, else the SQLite file of ``--config``.
Exit codes: 0 done, 1 refused (an unknown run, nothing to resume, …), 2 usage.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from dcbrain.cli._config import (
    AppVersionOption,
    ConfigOption,
    config_errors_exit,
    load_config_or_exit,
)
from dcbrain.cli._output import ExitCode, fail_usage, print_json, write_text

if TYPE_CHECKING:
    import httpx

    from dcbrain.memory import RunStore
    from dcbrain.server.service import RunService

runs_app = typer.Typer(help="List, inspect, cancel, resume, decide and prune runs (through a "
                       "server with --url, or the database).", no_args_is_help=True)

UrlOption = Annotated[str | None, typer.Option(
    "--url", help="The server (http://host:port); default: the database directly.",
    show_default=False)]
TokenOption = Annotated[str | None, typer.Option(
    "--token", help="The server's API token (default: $DCBRAIN_API_TOKEN).",
    show_default=False)]
DbOption = Annotated[str | None, typer.Option(
    "--db", help="The PostgreSQL URL the server and workers use (as serve --db); default: "
    "the SQLite file of --config.", show_default=False)]
RunArgument = Annotated[str, typer.Argument(
    help="The run id, or a prefix of it only one run has.")]
#: How many runs a prefix is looked for among (newest first), at most.
PREFIX_SEARCH_RUNS = 10_000

ANY_VERSION_HELP = (
    "Resume the run under this command's application version (--app-version, else the "
    "config's) instead of the one it started under, which no live worker may run. Divergence "
    "risk: the run executes from its start on its journal, so its finished calls are "
    "answered from the journal and never run again, but the new version may plan "
    "differently (other prompts, tools or models): a call the journal does not hold runs "
    "for the first time, and a different call where one is recorded fails the run "
    "(JournalDivergence).")


@dataclass
class _Target:
    url: str | None
    token: str | None
    db: str | None
    config: Path | None
    app_version: str | None = None


def _refused(message: str) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(ExitCode.FAILED)


# -- through the server --------------------------------------------------------------------

@contextmanager
def _http(target: _Target) -> Iterator[httpx.Client]:
    import httpx

    token = target.token or os.environ.get("DCBRAIN_API_TOKEN") or None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    assert target.url is not None
    try:
        with httpx.Client(base_url=target.url.rstrip("/"), headers=headers,
                          timeout=60) as client:
            yield client
    except httpx.HTTPError as exc:
        fail_usage(f"cannot reach {target.url}: {exc}")


def _answer(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if response.status_code in (400, 401, 415, 422):
            fail_usage(f"{detail} (HTTP {response.status_code})")
        _refused(str(detail))
    return response.json()


# -- through the database ------------------------------------------------------------------

@dataclass
class _Local:
    """The runs of a database, as a server on it would serve them (executing none)."""

    service: RunService
    durable: bool  # the runs are DBOS workflows (else a server executed them itself)
    shared: bool  # PostgreSQL: workers hear control messages sent from here


@contextmanager
def _database(target: _Target) -> Iterator[_Local]:
    from dcbrain.config.composition import FALLBACK_DB
    from dcbrain.memory import SQLiteRunStore

    loaded = load_config_or_exit(target.config)
    runs = None
    if target.db is None:
        path = loaded.resolve(loaded.memory.path or FALLBACK_DB)
        if not path.is_file():
            fail_usage(f"no run database at {path} (give the server's --config, --db or --url)")
        runs = SQLiteRunStore(path)
        if not path.with_name(path.name + "-dbos.sqlite").is_file():
            try:  # a server without durable runs kept this file
                yield _Local(_unexecuted_runs(runs), durable=False, shared=False)
            finally:
                runs.close()
            return
    try:
        from dcbrain.durable.setup import build_engine, open_store
        from dcbrain.server.durable_runs import DurableRuns
    except ImportError as exc:
        fail_usage(f"reading durable runs from the database needs DBOS ({exc}); use --url")
    with config_errors_exit():
        try:
            db_url, store = open_store(target.db, runs or SQLiteRunStore(":memory:"))
        except (OSError, ValueError) as exc:
            fail_usage(str(exc))
    with config_errors_exit():
        try:
            engine, hub = build_engine(db_url, store, loaded, None,
                                       app_version=target.app_version)
        except (OSError, ValueError) as exc:
            store.close()
            fail_usage(str(exc))
    engine.start()
    try:
        yield _Local(DurableRuns(engine, store, hub), durable=True, shared=target.db is not None)
    finally:
        engine.stop()
        store.close()
        if runs is not None:
            runs.close()


def _unexecuted_runs(store: RunStore) -> RunService:
    """The run manager of a store whose server is elsewhere: it lists, shows and prunes."""
    from dcbrain.server.runs import RunManager

    def no_brain() -> Any:
        raise AssertionError("the runs command executes no run")

    return RunManager(no_brain, store)


def _local_cancel(local: _Local, run_id: str) -> bool:
    """Cancel through the database; a running run of one process (SQLite) lives in the
    server's process, which this command cannot reach."""
    summary = asyncio.run(local.service.describe(run_id))
    if summary is None:
        _refused(f"no run {run_id!r}")
    from dcbrain.runs import LIVE_STATUSES

    live = summary["status"] in LIVE_STATUSES
    if live and not local.durable:
        _refused(f"run {run_id} is {summary['status']} in its server's process: cancel it "
                 "through the server (--url)")
    if summary["status"] == "running" and not local.shared:
        _refused(f"run {run_id} is running in the server's process: cancel it through the "
                 "server (--url)")
    return asyncio.run(local.service.abort_run(run_id))


# -- the commands ----------------------------------------------------------------------------

def _target(url: str | None, token: str | None, db: str | None, config: Path | None) -> _Target:
    if url is not None and db is not None:
        fail_usage("give --url (a server) or --db (its database), not both")
    return _Target(url, token, db, config)


@runs_app.command("ls")
def ls(
    status: Annotated[str | None, typer.Option(
        help="Only runs of these statuses (comma-separated).", show_default=False)] = None,
    conversation: Annotated[str | None, typer.Option(
        "--conversation", help="Only this conversation's runs.", show_default=False)] = None,
    limit: Annotated[int, typer.Option(help="Runs per page.")] = 50,
    cursor: Annotated[str | None, typer.Option(
        help="The next_cursor a previous page printed.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the page as JSON.")] = False,
    url: UrlOption = None, token: TokenOption = None, db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List runs, newest first."""
    target = _target(url, token, db, config)
    if target.url is not None:
        params = {key: value for key, value in {
            "status": status, "conversation_id": conversation, "limit": str(limit),
            "cursor": cursor}.items() if value is not None}
        with _http(target) as client:
            page = _answer(client.get("/v1/runs", params=params))
    else:
        from dcbrain.exceptions import InvalidRunQuery
        from dcbrain.runs.listing import RunQuery

        try:
            query = RunQuery.parse(status, conversation, limit, cursor)
        except InvalidRunQuery as exc:
            fail_usage(str(exc))
        with _database(target) as local:
            page = asyncio.run(local.service.page_runs(query)).to_dict()
    if as_json:
        print_json(page)
        return
    _print_table(page["runs"])
    if page["next_cursor"]:
        write_text(f"next page: --cursor {page['next_cursor']}\n", sys.stderr)


def _print_table(runs: list[dict[str, Any]]) -> None:
    import time

    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    widest = max((len(run["run_id"]) for run in runs), default=3)
    table.add_column("run", no_wrap=True, min_width=widest)  # whole: ids are typed back
    for name in ("conversation", "status", "reason"):
        table.add_column(name, overflow="fold")
    table.add_column("created", no_wrap=True)
    table.add_column("question", overflow="ellipsis", no_wrap=True)
    for run in runs:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["created_at"]))
        question = (run.get("question") or "").replace("\n", " ")
        table.add_row(run["run_id"], run.get("conversation_id") or "", run["status"],
                      run.get("reason") or "", created,
                      question[:40] + ("…" if len(question) > 40 else ""))
    Console(highlight=False, soft_wrap=True).print(table)


def _unique(prefix: str, pages: Iterator[dict[str, Any]]) -> str:
    """The one run id starting with ``prefix`` among the listed ``pages``; refused when
    none or several do."""
    found: list[str] = []
    seen = 0
    for page in pages:
        for run in page["runs"]:
            seen += 1
            if str(run["run_id"]).startswith(prefix):
                found.append(str(run["run_id"]))
        if len(found) > 1 or seen >= PREFIX_SEARCH_RUNS:
            break
    if not found:
        _refused(f"no run {prefix!r} (and no run id starts with it)")
    if len(found) > 1:
        _refused(f"{prefix!r} is the start of several run ids ({', '.join(found[:5])}"
                 f"{', …' if len(found) > 5 else ''}): give more of the id")
    return found[0]


def _http_pages(client: httpx.Client) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
        page: dict[str, Any] = _answer(client.get("/v1/runs", params=params))
        yield page
        cursor = page.get("next_cursor")
        if not cursor:
            return


def _local_pages(local: _Local) -> Iterator[dict[str, Any]]:
    from dcbrain.runs.listing import RunQuery

    cursor: str | None = None
    while True:
        page: dict[str, Any] = asyncio.run(local.service.page_runs(
            RunQuery.parse(None, None, 200, cursor))).to_dict()
        yield page
        cursor = page.get("next_cursor")
        if not cursor:
            return


@runs_app.command("show")
def show(run_id: RunArgument, url: UrlOption = None, token: TokenOption = None,
         db: DbOption = None, config: ConfigOption = None) -> None:
    """Print one run's record as JSON (the run id, or a prefix only one run has)."""
    target = _target(url, token, db, config)
    if target.url is not None:
        with _http(target) as client:
            response = client.get(f"/v1/runs/{run_id}")
            if response.status_code == 404:
                response = client.get(f"/v1/runs/{_unique(run_id, _http_pages(client))}")
            print_json(_answer(response))
        return
    with _database(target) as local:
        summary = asyncio.run(local.service.describe(run_id))
        if summary is None:
            summary = asyncio.run(local.service.describe(_unique(run_id, _local_pages(local))))
    if summary is None:
        _refused(f"no run {run_id!r}")
    print_json(summary)


@runs_app.command("cancel")
def cancel(run_id: RunArgument, url: UrlOption = None, token: TokenOption = None,
           db: DbOption = None, config: ConfigOption = None) -> None:
    """Stop a queued or running run (it ends aborted)."""
    target = _target(url, token, db, config)
    if target.url is not None:
        with _http(target) as client:
            _answer(client.post(f"/v1/runs/{run_id}/cancel", json={}))
    else:
        with _database(target) as local:
            if not _local_cancel(local, run_id):
                _refused(f"run {run_id} has already ended")
    write_text(f"cancelling {run_id}\n")


@runs_app.command("resume")
def resume(
    run_id: RunArgument,
    any_version: Annotated[bool, typer.Option("--any-version", help=ANY_VERSION_HELP)] = False,
    app_version: AppVersionOption = None,
    url: UrlOption = None, token: TokenOption = None, db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Put a durable run that no worker executes back on the queue (stranded: no live worker
    runs its version; or its workflow stopped: cancelled, or given up after crashes); prints
    its record."""
    from dcbrain.exceptions import RunConflict

    target = _target(url, token, db, config)
    target.app_version = app_version
    if target.url is not None:
        with _http(target) as client:
            resumed = _answer(client.post(f"/v1/runs/{run_id}/resume",
                                          json={"any_version": any_version}))
    else:
        with _database(target) as local:
            if asyncio.run(local.service.describe(run_id)) is None:
                _refused(f"no run {run_id!r}")
            try:
                resumed = asyncio.run(local.service.resume_run(run_id, any_version=any_version))
            except RunConflict as exc:
                _refused(str(exc))
    print_json({key: resumed.get(key) for key in
                ("run_id", "status", "resumed_from_version", "resumed_under_version")})


CallArgument = Annotated[str, typer.Argument(
    help="The call_id of the request (see runs show: approvals).")]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (the planner reads it).")]
ArgsHashOption = Annotated[str | None, typer.Option(
    "--args-hash", help="The request's args_hash: refused if the call's arguments differ.",
    show_default=False)]


@runs_app.command("approve")
def approve(run_id: RunArgument, call_id: CallArgument, reason: ReasonOption = "",
            args_hash: ArgsHashOption = None, url: UrlOption = None,
            token: TokenOption = None, db: DbOption = None,
            config: ConfigOption = None) -> None:
    """Approve a call a waiting run holds for a decision; prints the decision."""
    _decide(run_id, call_id, True, reason, args_hash, _target(url, token, db, config))


@runs_app.command("deny")
def deny(run_id: RunArgument, call_id: CallArgument, reason: ReasonOption = "",
         args_hash: ArgsHashOption = None, url: UrlOption = None,
         token: TokenOption = None, db: DbOption = None,
         config: ConfigOption = None) -> None:
    """Deny a call a waiting run holds for a decision; prints the decision."""
    _decide(run_id, call_id, False, reason, args_hash, _target(url, token, db, config))


def _decide(run_id: str, call_id: str, approved: bool, reason: str, args_hash: str | None,
            target: _Target) -> None:
    """One decision, through the server or the database (recorded as decided by ``cli``);
    the last one of a waiting durable run queues it again."""
    from dcbrain.approvals import MAX_REASON_CHARS
    from dcbrain.exceptions import TFApprovalError

    if len(reason) > MAX_REASON_CHARS:
        fail_usage(f"--reason: at most {MAX_REASON_CHARS} characters")
    if target.url is not None:
        with _http(target) as client:
            body: dict[str, Any] = {"approved": approved, "reason": reason}
            if args_hash is not None:
                body["args_hash"] = args_hash
            print_json(_answer(client.post(f"/v1/runs/{run_id}/approvals/{call_id}",
                                           json=body)))
        return
    with _database(target) as local:
        if not local.durable:
            _refused(f"the runs of {target.config or 'this config'} are not durable: a "
                     "waiting run lives in its server's process; decide through it (--url)")
        try:
            decision = asyncio.run(local.service.decide(
                run_id, call_id, approved=approved, reason=reason, args_hash=args_hash,
                by="cli"))
        except TFApprovalError as exc:
            _refused(str(exc))
    print_json({"run_id": run_id, **decision})


@runs_app.command("prune")
def prune(
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Delete runs that ended longer ago than this (30d, 12h, 90m).")],
    url: UrlOption = None, token: TokenOption = None, db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Delete finished runs (records, events, journals, DBOS workflow rows); never a queued,
    running or waiting one."""
    from dcbrain.runs.retention import parse_duration

    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        fail_usage(f"--older-than: {exc}")
    target = _target(url, token, db, config)
    if target.url is not None:
        with _http(target) as client:
            pruned = int(_answer(client.post("/v1/runs/prune",
                                             json={"older_than": older_than}))["pruned"])
    else:
        with _database(target) as local:
            pruned = local.service.prune(seconds)
    write_text(f"pruned {pruned} run(s)\n")


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")
