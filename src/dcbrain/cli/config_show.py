"""``dcbrain config show``: the effective configuration, each value with where it came from.

Sources, strongest first: a flag (``--config`` chooses the file), the environment
(``DCBRAIN_…`` variables), the file, the defaults. Secrets are masked: keys naming a key,
token, secret, password, authorization or cookie, the user, password and secret query
values of URLs, the value after a secret flag of a command (``--api-key X``,
``--token=X``), the value of the variable an ``api_key_env`` names, and any of those
written again anywhere else in the configuration.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import typer

from dcbrain.cli._config import ConfigOption, load_config_or_exit

if TYPE_CHECKING:
    from pydantic import BaseModel

    from dcbrain.config import Config

MASK = "****"
#: Key names whose values are secrets (``api_key_env`` names a variable: not one).
_SECRET_NAME = re.compile(
    r"(api_?key|_key|^key|token|secret|password|passwd|credentials?|auth|authorization"
    r"|auth_header|cookie)(?!_env)$", re.IGNORECASE)
#: A command-line flag whose value (``--flag value`` or ``--flag=value``) is a secret.
_SECRET_FLAG = re.compile(r"--?[\w-]*(key|token|secret|password|passwd|auth|cookie)[\w-]*",
                          re.IGNORECASE)
#: Secrets shorter than this are not looked for inside other values (too many false hits).
_MIN_SECRET = 6


def show(
    config: ConfigOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Print the effective configuration: every key with its value and where it came
    from (flag, environment, file or default); secrets masked."""
    from dcbrain.config import CONFIG_FILE_ENV, config_file

    chosen, why = config_file(config)
    loaded = load_config_or_exit(config)
    file_origin = {"given": "flag --config", CONFIG_FILE_ENV: f"environment {CONFIG_FILE_ENV}",
                   "default": "default ./dcbrain.toml", "none": "none"}[why]
    leaves = list(effective(loaded))
    hidden = known_secrets(leaves)
    rows = [(path, scrubbed(masked(path, value), hidden), source)
            for path, value, source in leaves]
    if json_output:
        sys.stdout.write(json.dumps({
            "config_file": str(chosen) if chosen is not None else None,
            "config_file_source": file_origin,
            "values": {path: {"value": value, "source": source} for path, value, source in rows},
        }, indent=2) + "\n")
        return
    sys.stdout.write(f"# config file: {chosen if chosen is not None else '(none)'} "
                     f"({file_origin})\n")
    for path, value, source in rows:
        sys.stdout.write(f"{path} = {json.dumps(value)}  # {source}\n")


def effective(config: Config) -> Iterator[tuple[str, Any, str]]:
    """Every key path of ``config`` with its value (as JSON data) and its source."""
    from pydantic_core import to_jsonable_python

    from dcbrain.config import FROM_FILE, origin_of

    for path, value in _leaves(config):
        origin = origin_of(path, config.origins)
        source = ("default" if origin is None else f"file {config.source}"
                  if origin == FROM_FILE else f"environment {origin}")
        yield path, to_jsonable_python(value), source


def _leaves(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    from pydantic import BaseModel

    for name, info in type(model).model_fields.items():
        if info.exclude:
            continue
        value = getattr(model, name)
        path = f"{prefix}{info.alias or name}"
        if isinstance(value, BaseModel):
            yield from _leaves(value, path + ".")
        elif isinstance(value, dict) and value and all(
                isinstance(item, BaseModel) for item in value.values()):
            for key, item in value.items():
                yield from _leaves(item, f"{path}.{key}.")
        else:
            yield path, value


def known_secrets(leaves: list[tuple[str, Any, str]]) -> list[str]:
    """The secrets of a configuration, to hide wherever else they are written: the values
    of secret-named keys, URL passwords and user names, the value of every variable an
    ``api_key_env`` names, and the value after a secret flag in a command."""
    found: set[str] = set()

    def collect(path: str, value: Any) -> None:
        name = path.rsplit(".", 1)[-1]
        if isinstance(value, dict):
            for key, item in value.items():
                collect(f"{path}.{key}", item)
        elif isinstance(value, list):
            for before, item in zip([None, *value], value, strict=False):
                if isinstance(before, str) and _SECRET_FLAG.fullmatch(before):
                    found.add(str(item))
                collect(path, item)
        elif isinstance(value, str):
            if _SECRET_NAME.search(name):
                found.add(value)
            if name.lower().endswith("api_key_env") and os.environ.get(value):
                found.add(os.environ[value])
            flag, eq, rest = value.partition("=")
            if eq and _SECRET_FLAG.fullmatch(flag):
                found.add(rest)
            if "://" in value:
                with contextlib.suppress(ValueError):
                    parts = urlsplit(value)
                    found.update(item for item in (parts.password, parts.username) if item)
                    found.update(item for key, item in parse_qsl(parts.query)
                                 if _SECRET_NAME.search(key))

    for path, value, _ in leaves:
        collect(path, value)
    return sorted((secret for secret in found if len(secret) >= _MIN_SECRET),
                  key=len, reverse=True)


def scrubbed(value: Any, secrets: list[str]) -> Any:
    """``value`` with every one of ``secrets`` written in it replaced by :data:`MASK`."""
    if isinstance(value, dict):
        return {key: scrubbed(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [scrubbed(item, secrets) for item in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
    return value


def masked(path: str, value: Any) -> Any:
    """``value`` with what is secret in it replaced by :data:`MASK`."""
    name = path.rsplit(".", 1)[-1]
    if _SECRET_NAME.search(name) and value not in (None, ""):
        return MASK
    if isinstance(value, dict):
        return {key: masked(f"{path}.{key}", item) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(path, item) for item in value]
    if isinstance(value, str) and "://" in value:
        return _masked_url(value)
    return value


def _masked_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not password and not any(_SECRET_NAME.search(key) for key, _ in query):
        return url
    netloc = parts.netloc
    if password:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:{MASK}@{host}"
    query = [(key, MASK if _SECRET_NAME.search(key) else item) for key, item in query]
    return urlunsplit(parts._replace(netloc=netloc,
                                     query=urlencode(query, safe="*") if query else ""))
