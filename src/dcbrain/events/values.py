"""Values as events carry them: JSON values, clipped when too large (see
:mod:`dcbrain.events`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dcbrain.values.jsonsafe import plain

#: Characters of JSON text a value may take in an event before it is clipped.
DEFAULT_CLIP = 2000
#: ``json.dumps(value, ensure_ascii=False)``, without making an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def clip(value: Any, limit: int = DEFAULT_CLIP) -> Any:
    """``value`` as a JSON value for an event, or a truncation marker when it is too large.

    Tuples become lists, sets sorted lists, non-finite floats their ``repr``, ints too
    long for decimal their hex string, other objects their ``str()`` (see
    :mod:`dcbrain.values.jsonsafe`);
    a value whose JSON text is longer than ``limit`` characters becomes
    ``{"truncated": True, "size": len(text), "preview": text[:limit]}`` (for a string,
    ``text`` is the string itself).
    """
    data = plain(value)
    if isinstance(data, bool | int | float) or data is None:
        return data
    if isinstance(data, str):
        if len(data) <= limit:
            return data
        return {"truncated": True, "size": len(data), "preview": data[:limit]}
    text = _ENCODER.encode(data)
    if len(text) <= limit:
        return data
    return {"truncated": True, "size": len(text), "preview": text[:limit]}


#: ``value`` as plain JSON data, never raising (see :mod:`dcbrain.values.jsonsafe`).
to_json_value = plain


#: Characters of JSON text one argument of a call may take in an event.
ARGUMENT_CLIP = 500
#: Characters of JSON text all the arguments of a call may take in an event.
ARGUMENTS_CLIP = 4 * DEFAULT_CLIP
#: The key under which an event says how many arguments it left out.
OMITTED_KEY = "..."


def clip_arguments(
    arguments: Mapping[str, Any], limit: int = ARGUMENT_CLIP, total: int = ARGUMENTS_CLIP
) -> dict[str, Any]:
    """A call's keyword ``arguments`` for an event: each one clipped to ``limit``
    characters, and the ones past ``total`` characters in all left out, counted under
    :data:`OMITTED_KEY` as ``{"truncated": True, "omitted": <count>}``."""
    shown: dict[str, Any] = {}
    used = 0
    for index, (key, value) in enumerate(arguments.items()):
        clipped = clip(value, limit)
        used += len(str(key)) + _json_length(clipped)
        if used > total:
            shown[OMITTED_KEY] = {"truncated": True, "omitted": len(arguments) - index}
            break
        shown[plain(str(key))] = clipped
    return shown


def _json_length(value: Any) -> int:
    return len(_ENCODER.encode(value))
