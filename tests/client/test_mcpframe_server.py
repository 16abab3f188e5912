"""The client against mcpframe's own Server, in memory (``Client(server)``), in both eras."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpframe.client import Client
from mcpframe.server import Context, Server

pytestmark = pytest.mark.anyio


def make_server() -> Server:
    server = Server("demo", version="1.0.0")

    @server.tool
    async def add(a: int, b: int, ctx: Context) -> int:
        """Add two numbers."""
        await ctx.report_progress(1, 2)
        return a + b

    return server


@pytest.mark.parametrize(("mode", "era"), [("auto", "modern"), ("legacy", "legacy")])
async def test_in_memory_round_trip(mode: Any, era: str) -> None:
    seen: list[float] = []
    with anyio.fail_after(10):
        async with Client(make_server(), mode=mode) as client:
            assert client.era == era
            assert client.server_info == {"name": "demo", "version": "1.0.0"}
            assert [tool["name"] for tool in await client.list_tools()] == ["add"]
            result = await client.call_tool("add", {"a": 1, "b": 2}, progress=lambda p, t, m: seen.append(p))
            assert result["content"] == [{"type": "text", "text": "3"}]
            await client.ping()
            assert client.session.pending == 0
