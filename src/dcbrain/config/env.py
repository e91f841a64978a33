"""Configuration keys from ``DCBRAIN_…`` environment variables (pydantic-settings).

A variable names a key path: ``DCBRAIN_`` then the path's parts joined by ``__``, matched
without regard to case (``DCBRAIN_BRAIN__MAX_ITERATIONS`` is ``brain.max_iterations``,
``DCBRAIN_MCP__NOTES__URL`` is ``mcp.notes.url``). A list or a table is given as JSON
(``DCBRAIN_TOOLS='["tools.py"]'``); ``null`` unsets a key the file sets. Variables
whose first part is no top-level key (``DCBRAIN_API_TOKEN``) are not configuration and
are left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, create_model

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

ENV_PREFIX = "DCBRAIN_"
NESTED_DELIMITER = "__"
#: The value that unsets a key the file sets (it takes its default again).
NULL = "null"


def has_variables(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` sets anything for :func:`environment_values` to read (checked
    first: pydantic-settings takes a while to import)."""
    return any(name.upper().startswith(ENV_PREFIX) for name in environ)


def _read(settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> dict[str, Any]:
    from pydantic_settings import EnvSettingsSource

    class Source(EnvSettingsSource):
        """pydantic-settings' environment source, reading ``environ`` (not ``os.environ``)."""

        def _load_env_vars(self) -> Mapping[str, str | None]:
            # Names match without regard to case, as the source's own reading does.
            return {name.lower(): None if value == NULL else value
                    for name, value in environ.items()}

    return Source(settings_cls, case_sensitive=False, env_prefix=ENV_PREFIX,
                  env_nested_delimiter=NESTED_DELIMITER)()


def environment_values(
    model: type[BaseModel], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The values ``DCBRAIN_…`` variables give ``model``'s fields, nested as in TOML, and
    for each key path a variable set (``"brain.max_iterations"``) the variable's name;
    ``ValueError`` naming the variable whose list or table is not JSON."""
    from pydantic_settings import BaseSettings, SettingsError

    environ = os.environ if environ is None else environ
    fields = {name: (info.annotation, None) for name, info in model.model_fields.items()
              if not info.exclude}
    # The source reads a settings class's fields: one with the model's (never validated).
    settings: type[BaseSettings] = create_model(  # type: ignore[call-overload]
        f"{model.__name__}FromEnvironment", __base__=BaseSettings, **fields)
    try:
        values = _read(settings, environ)
    except SettingsError as exc:
        field = next((name for name in fields if f'field "{name}"' in str(exc)), "")
        variable = next((name for name in environ
                         if name.upper() == f"{ENV_PREFIX}{field.upper()}"), ENV_PREFIX + "…")
        raise ValueError(f"{field or '(top level)'}: not valid JSON (from {variable}); "
                         "give a list or a table as JSON, e.g. [\"a\", \"b\"]") from None
    origins: dict[str, str] = {}
    for variable in environ:
        if not variable.upper().startswith(ENV_PREFIX):
            continue
        path = variable[len(ENV_PREFIX):].lower().split(NESTED_DELIMITER)
        if _lookup(values, path):
            origins[".".join(path)] = variable
    return values, origins


def _lookup(values: Any, path: list[str]) -> bool:
    for part in path:
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True


def merged(base: dict[str, Any], over: Mapping[str, Any],
           origins: dict[str, str], prefix: str = "") -> dict[str, Any]:
    """``base`` with ``over``'s values put in, tables merged key by key.

    A key of ``over`` that matches one of ``base`` but for case takes ``base``'s spelling
    (a variable reaches ``[llm.Main]``), and so does its path in ``origins``.
    """
    result = dict(base)
    for key, value in over.items():
        spelled = next((existing for existing in base if existing.lower() == key), key)
        path, spelled_path = f"{prefix}{key}", f"{prefix}{spelled}"
        if spelled != key:
            for origin in [p for p in origins if p == path or p.startswith(path + ".")]:
                origins[spelled_path + origin[len(path):]] = origins.pop(origin)
        if isinstance(value, Mapping) and isinstance(base.get(spelled), dict):
            result[spelled] = merged(base[spelled], value, origins, spelled_path + ".")
        else:
            result[spelled] = value
    return result
