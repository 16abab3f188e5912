"""The tools `benches/bench_http_wire.py` calls, on mcpframe's Server (`server`) and the SDK's (`sdk_server`).

`echo` is a plain `def` (mcpframe runs it on its worker pool), `aecho` an `async def` (run on the loop),
`ayield` an `async def` that suspends once (`await asyncio.sleep(0)`) as a tool awaiting I/O does, `slow`
an `async def` that awaits 20 ms, standing in for a tool waiting on a database or an API.
Served as `mcpframe serve benches/servers/http_tools.py:server --http`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpframe.server import Server

SLOW_SECONDS = 0.020

server = Server("bench-http-wire", version="1.0.0")


@server.tool
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


@server.tool
async def aecho(text: str) -> str:
    """Return `text` unchanged, from a coroutine."""
    return text


@server.tool
async def ayield(text: str) -> str:
    """Return `text` unchanged, after giving the loop one turn."""
    await asyncio.sleep(0)
    return text


@server.tool
async def slow(text: str) -> str:
    """Return `text` after 20 ms of waiting on something else."""
    await asyncio.sleep(SLOW_SECONDS)
    return text


def sdk_server() -> Any:
    """The same four tools on the official SDK's `MCPServer` (imported here: the SDK is optional)."""
    from mcp.server.mcpserver import MCPServer  # noqa: PLC0415

    sdk = MCPServer("bench-http-wire", version="1.0.0", log_level="WARNING")

    @sdk.tool()
    def echo(text: str) -> str:
        """Return `text` unchanged."""
        return text

    @sdk.tool()
    async def aecho(text: str) -> str:
        """Return `text` unchanged, from a coroutine."""
        return text

    @sdk.tool()
    async def ayield(text: str) -> str:
        """Return `text` unchanged, after giving the loop one turn."""
        await asyncio.sleep(0)
        return text

    @sdk.tool()
    async def slow(text: str) -> str:
        """Return `text` after 20 ms of waiting on something else."""
        await asyncio.sleep(SLOW_SECONDS)
        return text

    return sdk
