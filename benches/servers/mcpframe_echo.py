"""mcpframe's Server on stdio with one tool, `echo(text) -> text`; the core backend follows MCPFRAME_BACKEND.

Run as `python benches/servers/mcpframe_echo.py` (or `mcpframe serve mcpframe_echo:server` from this folder).
"""

from __future__ import annotations

from mcpframe.server import Server

server = Server("bench-echo", version="1.0.0")


@server.tool
async def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


if __name__ == "__main__":
    server.run()
