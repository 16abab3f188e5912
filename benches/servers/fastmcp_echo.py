"""FastMCP (fastmcp 4.1.2) on stdio with one tool, `echo(text) -> text`."""

from __future__ import annotations

from fastmcp import FastMCP

server = FastMCP("bench-echo", version="1.0.0")


@server.tool
async def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


if __name__ == "__main__":
    server.run(show_banner=False)
