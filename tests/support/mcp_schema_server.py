"""An MCP server with one tool, ``lookup``, whose input schema is the JSON in ``argv[1]``
and whose output schema is the JSON in ``argv[2]``, if given.

It is written with the SDK's low-level server, which sends the schemas as given and does
not validate arguments itself; ``lookup`` answers its arguments as JSON text, and as its
structured content when it has an output schema.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mcp import types

INPUT_SCHEMA: dict[str, Any] = json.loads(sys.argv[1])
OUTPUT_SCHEMA: dict[str, Any] | None = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None


async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
    tool = types.Tool(name="lookup", description="Answer the arguments.",
                      input_schema=INPUT_SCHEMA, output_schema=OUTPUT_SCHEMA)
    return types.ListToolsResult(tools=[tool])


async def call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    content = [types.TextContent(type="text", text=json.dumps(arguments))]
    structured = arguments if OUTPUT_SCHEMA is not None else None
    return types.CallToolResult(content=content, structured_content=structured)


server: Server[Any] = Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
