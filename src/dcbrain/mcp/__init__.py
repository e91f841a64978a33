"""MCP (Model Context Protocol): tools of MCP servers, and dcbrain served as one.

``MCPTools`` gives an MCP server's tools to plans, chains and agents; ``dcbrain mcp``
(:mod:`dcbrain.mcp.server`) serves a brain as an MCP server with one ``ask`` tool. The
``mcp`` SDK is imported only when a server is started, and each name here only on first
use (the config reads :mod:`dcbrain.mcp.limits` without loading the client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dcbrain._lazy import lazy_exports

if TYPE_CHECKING:
    from dcbrain.mcp.client import MCPTools, TFMCPError, TFMCPTransportError

__all__ = ["MCPTools", "TFMCPError", "TFMCPTransportError"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "MCPTools": "dcbrain.mcp.client",
    "TFMCPError": "dcbrain.mcp.client",
    "TFMCPTransportError": "dcbrain.mcp.client",
})
