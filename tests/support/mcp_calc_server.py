"""An MCP server written with the SDK, for the tests: stdio, or ``--http PORT``."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("calc")
CALLS: list[str] = []


class Total(BaseModel):
    total: int
    parts: list[int]


@server.tool()
def add(a: int, b: int = 1) -> Total:
    """Add two integers."""
    CALLS.append("add")
    return Total(total=a + b, parts=[a, b])


@server.tool(name="shout-text")
def shout(text: str) -> str:
    """Upper-case a text."""
    CALLS.append("shout")
    return text.upper()


@server.tool(structured_output=False)
def greet(name: str) -> str:
    """Greet someone (text content only)."""
    return f"hello {name}"


@server.tool()
async def count(n: int, ctx: Context) -> list[int]:
    """Count to n, reporting progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return list(range(1, n + 1))


@server.tool()
def calls() -> list[str]:
    """The tools called so far in this server process."""
    return list(CALLS)


@server.tool()
def explode() -> str:
    """Always fails."""
    raise ValueError("kaboom")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
