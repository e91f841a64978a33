"""A small MCP server written with the official SDK: run by ``examples/mcp_tools.py``."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("weather")

FORECASTS = {"paris": (18, "light rain"), "lisbon": (24, "sunny"), "oslo": (9, "cloudy")}


class Forecast(BaseModel):
    city: str
    celsius: int
    sky: str


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    celsius, sky = FORECASTS.get(city.lower(), (15, "unknown"))
    return Forecast(city=city, celsius=celsius, sky=sky)


@server.tool(name="list-cities")
def list_cities() -> list[str]:
    """The cities with a forecast."""
    return sorted(FORECASTS)


if __name__ == "__main__":
    server.run()
