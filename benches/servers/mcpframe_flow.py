"""mcpframe's Server on stdio with the flow-control benchmark's two tools; the core follows MCPFRAME_BACKEND.

`echo` is a plain `def` (it runs on the worker pool: the thread hop is part of what is measured); `nap`
is an `async def` that waits 10 ms before answering, so thousands of calls are in flight at once.
"""

from __future__ import annotations

import asyncio

from mcpframe.server import Server

server = Server("bench-flow", version="1.0.0")


@server.tool
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


@server.tool
async def nap(text: str) -> str:
    """Return `text` unchanged after 10 ms."""
    await asyncio.sleep(0.010)
    return text


if __name__ == "__main__":
    server.run()
