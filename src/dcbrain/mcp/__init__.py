"""MCP (Model Context Protocol): tools of MCP servers, and dcbrain served as one.

``MCPTools`` gives an MCP server's tools to plans, chains and agents; ``dcbrain mcp``
(:mod:`dcbrain.mcp.server`) serves a brain as an MCP server with one ``ask`` tool. The
``mcp`` SDK is imported only when a server is started.
"""

from dcbrain.mcp.client import MCPTools, TFMCPError

__all__ = ["MCPTools", "TFMCPError"]
