"""MCP values as dcbrain sees them: tool names as identifiers, results as plain data."""

from __future__ import annotations

import keyword
import re
import unicodedata
from typing import Any

_NOT_IDENTIFIER = re.compile(r"\W")


def identifier(name: str) -> str:
    """``name`` as a Python identifier a plan can call (``get-page`` → ``get_page``), in
    the form Python reads it (NFKC: ``ﬁnd`` → ``find``), so that a look-alike meets the
    clash checks under the name a plan writes."""
    text = _NOT_IDENTIFIER.sub("_", unicodedata.normalize("NFKC", name)) or "_"
    if text[0].isdigit() or keyword.iskeyword(text):
        text = "_" + text if text[0].isdigit() else text + "_"
    return text


def wrapped_output(output_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The schema of the value the SDK wraps as ``{"result": ...}`` for a tool whose
    return type is not an object (its output schema is titled ``<function>Output``)."""
    title = output_schema.get("title") if output_schema else None
    if not isinstance(title, str) or not title.endswith("Output"):
        return None
    assert output_schema is not None
    properties = output_schema.get("properties")
    if not isinstance(properties, dict) or set(properties) != {"result"}:
        return None
    inner = properties["result"]
    return inner if isinstance(inner, dict) else None


def plain_result(result: Any, wrapped: bool) -> Any:
    """The plain data of a ``tools/call`` result.

    Structured content when there is some (unwrapped from ``{"result": ...}`` when
    ``wrapped``); otherwise the text of a single text block, a list for several blocks,
    and non-text blocks (images, resources) as their JSON fields.
    """
    structured = result.structured_content
    if structured is not None:
        if wrapped and isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    blocks = [_block(block) for block in result.content]
    if len(blocks) == 1:
        return blocks[0]
    return blocks


def _block(block: Any) -> Any:
    if getattr(block, "type", None) == "text":
        return block.text
    return block.model_dump(mode="json", exclude_none=True, by_alias=True)
