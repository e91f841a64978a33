"""The generated part of ``docs/events.md``: every event class and its fields.

Rendered from :data:`dcbrain.events.EVENT_CLASSES`, so a field added to a class shows
up in the docs at once (a test checks the file is current).

    python -m dcbrain.events.docs docs/events.md   # rewrite the generated part
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dcbrain._docparts import GeneratedPart
from dcbrain.events import (
    EVENT_CLASSES,
    DiffItem,
    EventData,
    PlanDiffData,
    RevisedItem,
    event_classes,
)

_PART = GeneratedPart("dcbrain.events.docs")


def events_reference() -> str:
    """The generated part of ``docs/events.md``, markers included."""
    lines = [_PART.start, ""]
    for event_type in dict.fromkeys(cls.type for cls in EVENT_CLASSES):
        classes = event_classes(event_type)
        if len(classes) == 1:
            cls = classes[0]
            lines += [f"### `{event_type}` (`{cls.__name__}`)", "", _doc(cls), "",
                      *_table(cls), ""]
            continue
        lines += [f"### `{event_type}`", ""]
        base = classes[0].__mro__[1]
        if all(issubclass(cls, base) for cls in classes) and base is not EventData:
            lines += [f"`{base.__name__}`: {_doc(base)}", ""]
        for cls in classes:
            lines += [f"#### `{cls.__name__}`", "", _doc(cls), "", *_table(cls), ""]
    lines += ["### Diff items", ""]
    for model in (PlanDiffData, DiffItem, RevisedItem):
        lines += [f"`{model.__name__}`:", "", *_table(model), ""]
    lines.append(_PART.end)
    return "\n".join(lines)


def _doc(cls: type) -> str:
    text = inspect.cleandoc(cls.__doc__ or "")
    return " ".join(text.replace(":class:", "").replace("``", "`").split())


def _table(model: type[BaseModel]) -> list[str]:
    rows = ["| field | type | always present |", "| --- | --- | --- |"]
    for name, info in model.model_fields.items():
        always = "yes" if info.is_required() or info.default is not None else ""
        rows.append(f"| `{name}` | `{_type_name(info.annotation)}` | {always} |")
    return rows


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        named = [_type_name(arg) for arg in arguments if arg is not type(None)]
        optional = " or None" if type(None) in arguments else ""
        return " or ".join(named) + optional
    if origin is typing.Literal:
        return " or ".join(f'"{arg}"' for arg in arguments)
    if origin is not None:
        inner = ", ".join(_type_name(arg) for arg in arguments)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is Any:
        return "Any"
    return getattr(annotation, "__name__", str(annotation))


def generated_part(document: str) -> str | None:
    """The generated part of ``document`` (markers included), if it has one."""
    return _PART.find(document)


def write_reference(path: Path) -> None:
    """Replace the generated part of the document at ``path`` with the current one."""
    _PART.rewrite(path, events_reference())


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        write_reference(Path(argument))
