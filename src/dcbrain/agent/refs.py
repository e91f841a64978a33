"""References from a step's arguments to earlier steps' results.

An argument value ``{"$ref": "step-2.result.total"}`` is replaced, just before the step
runs, by that part of step 2's result. After ``result`` a path of dict keys and list
indices follows, written ``.key``, ``.0`` or ``[0]``: ``step-1.result.items[0].url``.
References may sit anywhere in the arguments (inside lists and dicts, in gather calls).
A reference that cannot be resolved is a replannable error naming the step and the path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dcbrain.exceptions import TFReferenceError

REF_KEY = "$ref"
"""The key of a reference object: ``{"$ref": "step-<id>.result<path>"}``."""

#: Deeper arguments are refused: a planner's JSON must not exhaust the Python stack.
MAX_DEPTH = 100

_REFERENCE = re.compile(r"step-(\d+)\.result((?:\.[^.\[\]]+|\[\d+\])*)")
_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def is_reference(value: object) -> bool:
    """True for a reference object: a dict whose only key is ``"$ref"``."""
    return isinstance(value, dict) and len(value) == 1 and REF_KEY in value


def references(value: Any, _depth: int = 0) -> list[str]:
    """Every reference text in ``value`` (arguments, nested lists and dicts), in order."""
    _check_depth(_depth)
    found: list[str] = []
    if is_reference(value):
        found.append(value[REF_KEY])
    elif isinstance(value, dict):
        for item in value.values():
            found.extend(references(item, _depth + 1))
    elif isinstance(value, list | tuple):
        for item in value:
            found.extend(references(item, _depth + 1))
    return found


def parse_reference(text: object) -> tuple[int, list[str | int]]:
    """The step id and path of a reference text; :class:`TFReferenceError` when malformed."""
    match = _REFERENCE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise TFReferenceError(
            f"malformed reference {text!r}: write {{\"$ref\": \"step-<id>.result\"}}, "
            "optionally followed by .key or [index] parts"
        )
    path: list[str | int] = []
    for key, index in _SEGMENT.findall(match.group(2)):
        if index:
            path.append(int(index))
        else:
            path.append(int(key) if key.isdigit() else key)
    return int(match.group(1)), path


def reference_problems(args: Any, step_id: int, earlier_ids: set[int]) -> list[str]:
    """Static problems of a step's references: malformed, or to itself or a later step.

    ``earlier_ids`` are the ids of the plan's steps before this one; other ids may name
    steps of earlier revisions, which only the executor knows.
    """
    problems: list[str] = []
    try:
        found = references(args)
    except TFReferenceError as exc:
        return [str(exc)]
    for text in found:
        try:
            target, _ = parse_reference(text)
        except TFReferenceError as exc:
            problems.append(str(exc))
            continue
        if target == step_id:
            problems.append(f"reference {text!r} points at the step itself")
        elif target > step_id and target not in earlier_ids:
            problems.append(f"reference {text!r} points at a later step")
    return problems


def resolve_references(args: Any, results: Mapping[int, Any], _depth: int = 0) -> Any:
    """``args`` with every reference replaced by the value it points at.

    ``results`` maps the ids of steps that produced a result to that result. Raises
    :class:`TFReferenceError` naming the reference and what is wrong with it.
    """
    _check_depth(_depth)
    if is_reference(args):
        return _resolve(args[REF_KEY], results)
    if isinstance(args, dict):
        return {key: resolve_references(value, results, _depth + 1)
                for key, value in args.items()}
    if isinstance(args, list):
        return [resolve_references(value, results, _depth + 1) for value in args]
    return args


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise TFReferenceError(f"arguments nested deeper than {MAX_DEPTH} levels")


def _resolve(text: object, results: Mapping[int, Any]) -> Any:
    target, path = parse_reference(text)
    if target not in results:
        known = ", ".join(str(key) for key in sorted(results)) or "none yet"
        raise TFReferenceError(f"reference {text!r}: step {target} has no result "
                               f"(steps with results: {known})")
    value = results[target]
    walked = f"step-{target}.result"
    for part in path:
        value = _step_into(value, part, text, walked)
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return value


def _step_into(value: Any, part: str | int, text: object, walked: str) -> Any:
    if isinstance(value, dict):
        key = str(part)
        if key in value:
            return value[key]
        keys = ", ".join(map(str, list(value)[:10])) or "none"
        raise TFReferenceError(f"reference {text!r}: {walked} has no key {key!r} "
                               f"(keys: {keys})")
    if isinstance(value, list):
        if isinstance(part, int) and part < len(value):
            return value[part]
        what = f"index {part} is out of range" if isinstance(part, int) else \
            f"{part!r} is not an index"
        raise TFReferenceError(f"reference {text!r}: {walked} is a list of {len(value)} "
                               f"items: {what}")
    raise TFReferenceError(f"reference {text!r}: {walked} is {type(value).__name__}, "
                           f"which has no part {part!r}")
