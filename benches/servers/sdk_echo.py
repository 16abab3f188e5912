"""The official SDK's `MCPServer` (mcp 2.3.0) on stdio with one tool, `echo(text) -> text`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo", version="1.0.0", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


if __name__ == "__main__":
    server.run("stdio")
