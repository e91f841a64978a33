"""``--config`` for every command: one option, one way to find and read the file, one exit.

Every command resolves its :class:`~dcbrain.config.Config` once, here, and passes it on; a
configuration problem ends the command with exit code 2 and the file's key paths on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dcbrain.cli._output import ExitCode

if TYPE_CHECKING:
    from dcbrain.config import Config

CONFIG_HELP = ("Config file (default: $DCBRAIN_CONFIG, else ./dcbrain.toml if present, else "
               "none: the embedded local model, no tools). DCBRAIN_... variables set any key.")

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help=CONFIG_HELP, show_default=False),
]


@contextmanager
def config_errors_exit() -> Iterator[None]:
    """A :class:`~dcbrain.config.ConfigError` raised inside ends the command with exit 2."""
    from dcbrain.config import ConfigError

    try:
        yield
    except ConfigError as exc:
        sys.stderr.write(f"{exc}\n")
        raise typer.Exit(ExitCode.USAGE) from None


def load_config_or_exit(path: Path | None, *, required: bool = False) -> Config:
    """The command's config: ``path``, else ``$DCBRAIN_CONFIG``, else ``./dcbrain.toml`` if
    present, else none; ``DCBRAIN_…`` variables over it.

    With ``required``, a missing ``./dcbrain.toml`` is an error, not the defaults. Keys the
    file still spells the old way are warned about on stderr.
    """
    from dcbrain.config import DEFAULT_CONFIG_FILE, config_file, find_config, load_config

    with config_errors_exit():
        chosen, _ = config_file(path)
        loaded = (load_config(chosen or DEFAULT_CONFIG_FILE) if required
                  else find_config(path))
    for message in loaded.deprecations:
        sys.stderr.write(f"warning: {loaded.source}: {message}\n")
    return loaded


AppVersionOption = Annotated[
    str | None,
    typer.Option("--app-version", envvar="DCBRAIN_APP_VERSION", show_default=False,
                 help="Application version of this process's runs (e.g. a release tag). "
                 "Default: dcbrain-<version>-<hash of the config and its tool files>. A run "
                 "resumes only on a worker of its version."),
]
