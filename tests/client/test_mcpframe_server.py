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
            result = await client.call_tool(
                "add", {"a": 1, "b": 2}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert result["content"] == [{"type": "text", "text": "3"}]
            await client.ping()
            assert client.session.pending == 0


async def test_listen_delivers_list_changes_in_the_modern_era() -> None:
    server = make_server()
    changed = anyio.Event()
    seen: list[str] = []

    def on_note(method: str, params: Any) -> None:
        seen.append(method)
        if method == "notifications/tools/list_changed":
            changed.set()

    with anyio.fail_after(10):
        async with Client(server, notification_handler=on_note) as client:
            assert client.era == "modern"
            async with client.listen(tools=True, prompts=True) as accepted:
                assert accepted == {"toolsListChanged": True}  # this server has no prompts

                @server.tool
                def late() -> str:
                    """Registered while a client listens."""
                    return "late"

                await changed.wait()
                assert "late" in [tool["name"] for tool in await client.list_tools()]
            assert client.session.pending == 0  # leaving the block cancelled the listen request


async def test_listen_is_modern_only() -> None:
    with anyio.fail_after(10):
        async with Client(make_server(), mode="legacy") as client:
            with pytest.raises(RuntimeError):
                async with client.listen(tools=True):
                    pass


async def test_subscribe_is_handshake_era_only() -> None:
    with anyio.fail_after(10):
        async with Client(make_server()) as client:
            assert client.era == "modern"
            for call in (client.subscribe, client.unsubscribe):
                with pytest.raises(RuntimeError, match="listen"):
                    await call("res://x")
            assert client.session.pending == 0  # nothing was sent
