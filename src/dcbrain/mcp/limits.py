"""How much an MCP server may send: the defaults of ``MCPTools``' and ``[mcp.NAME]``'s limits.

A server is untrusted: its messages are refused past ``max_message_bytes`` before they
are parsed, and its tool list is cut off past ``max_list_pages`` pages, ``max_tools``
tools or ``max_list_bytes`` bytes (all pages together).
"""

from __future__ import annotations

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_TOOLS = 1000
DEFAULT_MAX_LIST_PAGES = 100
DEFAULT_MAX_LIST_BYTES = 16 * 1024 * 1024


def size_text(count: int) -> str:
    """``16 MiB``, ``512 KiB``, ``100 bytes``: a byte count as people write it."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"
