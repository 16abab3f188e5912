"""The official SDK's (mcp 2.3.0, `MCPServer`, FastMCP's successor) legacy SSE server, for the client tests.

`python client_sdk_sse_server.py` binds a free port on 127.0.0.1, prints `URL <base url>` on stdout and serves
`.sse_app()` (GET `/sse`, POST `/messages/?session_id=...`) under uvicorn until killed.
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-sse-server", version="2.3.0", instructions="legacy SSE for tests")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"counted {steps}"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleep, so that a test can drop the stream while a call waits."""
    await asyncio.sleep(seconds)
    return "rested"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool fails")


@server.resource("test://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static content"


@server.resource("test://items/{item}")
def item(item: str) -> str:
    """One item."""
    return f"item {item}"


@server.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review: {code}"


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(server.sse_app(), log_level="warning", lifespan="on")
    print(f"URL http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    sys.stdout.flush()
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
