"""How much an MCP server may send: the defaults of ``MCPTools``' and ``[mcp.NAME]``'s limits.

A server is untrusted: its messages are refused past ``max_message_bytes`` before they
are parsed, and its tool list is cut off past ``max_list_pages`` pages, ``max_tools``
tools or ``max_list_bytes`` bytes (all pages together). A tool name longer than
:data:`MAX_TOOL_NAME_CHARS` (the MCP specification's 128) is refused, and a description
is cut to :data:`MAX_TOOL_DESCRIPTION_CHARS`.
"""

from __future__ import annotations

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_TOOLS = 1000
DEFAULT_MAX_LIST_PAGES = 100
DEFAULT_MAX_LIST_BYTES = 16 * 1024 * 1024
#: Characters a tool's name may have (names go into every planning prompt).
MAX_TOOL_NAME_CHARS = 128
#: Characters of a tool's description kept (it goes into every planning prompt).
MAX_TOOL_DESCRIPTION_CHARS = 4000
#: Tool names a refusal lists before it says how many more there are.
LISTED_NAMES = 20


def listed_names(names: list[str]) -> str:
    """``a, b, c`` (the first :data:`LISTED_NAMES`, then ``… and N more``), or ``none``."""
    shown = ", ".join(name[:60] for name in names[:LISTED_NAMES]) or "none"
    more = len(names) - LISTED_NAMES
    return shown + (f" … and {more} more" if more > 0 else "")


def size_text(count: int) -> str:
    """``16 MiB``, ``512 KiB``, ``100 bytes``: a byte count as people write it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"
